//go:build linux && cgo && seccomp

package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func defaultProfile(t *testing.T) *specs.LinuxSeccomp {
	t.Helper()
	s := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}}}}
	p, err := seccomp.GetDefaultProfile(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompile(t *testing.T) {
	p, err := Compile(defaultProfile(t))
	if err != nil {
		t.Fatal(err)
	}
	// SECCOMP_FILTER_FLAG_SPEC_ALLOW: runc's default where the kernel has it.
	if len(p.Insns) < 100 || p.Flags&unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW == 0 {
		t.Errorf("default profile: %d instructions, flags %#x", len(p.Insns), p.Flags)
	}
	if p, err := Compile(&specs.LinuxSeccomp{}); p != nil || err != nil {
		t.Errorf("empty profile: %+v, %v", p, err)
	}
	if _, err := Compile(&specs.LinuxSeccomp{DefaultAction: "SCMP_ACT_NOPE"}); err == nil {
		t.Error("a bad action compiled")
	}
	if _, err := Compile(&specs.LinuxSeccomp{DefaultAction: specs.ActNotify}); err == nil {
		t.Error("a notifying profile compiled")
	}
}

// The cache compiles a profile once, and the next runtime finds it on
// disk.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	prof, err := json.Marshal(defaultProfile(t))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewCache(dir).Get(prof)
	if err != nil || a == nil {
		t.Fatal(a, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("cache directory holds %d files", len(ents))
	}
	b, err := NewCache(dir).Get(prof)
	if err != nil || string(a) != string(b) {
		t.Fatalf("from disk: %v", err)
	}
	if b, err := NewCache(dir).Get(nil); b != nil || err != nil {
		t.Errorf("no profile: %v %v", b, err)
	}
}

func init() { children["install"] = installAndTry }

// A program compiled and installed denies what its profile denies and
// nothing else. The filter stays with the process: a child does the
// install.
func TestInstall(t *testing.T) {
	out, err := runChild(t, "install")
	if err != nil || !strings.Contains(out, childOK) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func installAndTry(dir string) error {
	p, err := Compile(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"mkdir", "mkdirat"}, Action: specs.ActErrno},
	}})
	if err != nil {
		return err
	}
	runtime.LockOSThread() // the filter is the thread's, as in the init
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if err := p.install(); err != nil {
		return err
	}
	if err := unix.Mkdir(dir+"/d", 0o700); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("mkdir under the filter: %v", err)
	}
	fd, err := unix.Open(dir+"/f", unix.O_CREAT|unix.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open under the filter: %w", err)
	}
	return unix.Close(fd)
}
