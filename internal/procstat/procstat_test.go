package procstat

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	comm, f, ok := Parse([]byte("42 (a (b) c) S 7 42 42 0 -1\n"))
	if !ok || comm != "a (b) c" || f[0] != "S" || f[1] != "7" {
		t.Fatalf("Parse = %q %q %v", comm, f, ok)
	}
	for _, bad := range []string{"", "42 a S 7", "42 (x)", "42 (x) S"} {
		if _, _, ok := Parse([]byte(bad)); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560"))
	f.Add([]byte("9 ()) Z 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, fields, ok := Parse(b); ok && len(fields) < 2 {
			t.Fatalf("ok with %d fields", len(fields))
		}
	})
}

func TestChildren(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	kids := Children(os.Getpid())
	i := slices.IndexFunc(kids, func(p Proc) bool { return p.PID == cmd.Process.Pid })
	if i < 0 || kids[i].Comm != "sleep" || kids[i].State == "Z" {
		t.Fatalf("child %d not among %v", cmd.Process.Pid, kids)
	}
	comm, f, ok := Read(strconv.Itoa(cmd.Process.Pid))
	if !ok || comm != "sleep" || f[1] != strconv.Itoa(os.Getpid()) {
		t.Fatalf("Read = %q %q %v", comm, f, ok)
	}
}
