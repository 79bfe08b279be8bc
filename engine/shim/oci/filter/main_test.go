package filter

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// A seccomp filter stays with the process that installs it: the tests that
// install one run it in a child, the test binary run again with childEnv
// naming the function (of children) to run in a temporary directory.
const (
	childEnv = "HUTCH_FILTER_TEST_CHILD"
	childOK  = "child: ok"
)

var children = map[string]func(dir string) error{}

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		f := children[name]
		if f == nil {
			fmt.Fprintln(os.Stderr, "no child", name)
			os.Exit(2)
		}
		if err := f(os.Getenv(childEnv + "_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(childOK)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild runs children[name] in a child process and returns its output.
func runChild(t *testing.T, name string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+name, childEnv+"_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}
