package filter

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The functions linked from runc (compile_seccomp.go) and the log entries
// Arm waits for are runc's internals: after an upgrade of the module,
// this says which moved.
func TestRuncSignatures(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/opencontainers/runc").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	for file, wants := range map[string][]string{
		"libcontainer/seccomp/seccomp_linux.go": {
			"func getAction(act configs.Action, errnoRet *uint) (libseccomp.ScmpAction, error) {",
			"func setFlag(filter *libseccomp.ScmpFilter, flag specs.LinuxSeccompFlag) error {",
			"func matchCall(filter *libseccomp.ScmpFilter, call *configs.Syscall, defAct libseccomp.ScmpAction) error {",
		},
		"libcontainer/seccomp/patchbpf/enosys_linux.go": {
			"func enosysPatchFilter(config *configs.Seccomp, filter *libseccomp.ScmpFilter) ([]unix.SockFilter, error) {",
			"func filterFlags(config *configs.Seccomp, filter *libseccomp.ScmpFilter) (flags uint, noNewPrivs bool, err error) {",
		},
		"libcontainer/sync.go": {
			`logrus.Debugf("read sync %s", sync)`,
			`str := "type:" + string(s.Type)`,
		},
		"libcontainer/init_linux.go": {
			"return readSync(pipe, procRun)",
			`if levelStr := os.Getenv("_LIBCONTAINER_LOGLEVEL"); levelStr != "" {`,
		},
		"libcontainer/standard_init_linux.go": {
			`logrus.Debugf("` + entryInitDone + `")`,
			"if l.config.Config.Seccomp != nil && !l.config.NoNewPrivileges {",
		},
		"libcontainer/setns_init_linux.go": {
			`logrus.Debugf("` + entryExecDone + `")`,
		},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s no longer has %s", file, w)
			}
		}
	}
}
