package filter

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// denyMkdirat is a program written by hand (no libseccomp): EPERM for
// mkdirat, every other call allowed.
var denyMkdirat = &Program{Insns: []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.SYS_MKDIRAT},
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
}}

func init() {
	children["hook-installs"] = hookInstalls
	children["hook-unarmed"] = hookUnarmed
}

// debugEntry is libcontainer's debug entry msg.
func debugEntry(msg string) *logrus.Entry {
	e := logrus.NewEntry(logrus.New())
	e.Level, e.Message = logrus.DebugLevel, msg
	return e
}

// The hook installs the program at the procRun entry, not before, and
// keeps later debug entries out of the log.
func hookInstalls(dir string) error {
	runtime.LockOSThread() // the init's thread is locked too
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	h := &hook{prog: denyMkdirat}
	e := debugEntry("child process in init()")
	_ = h.Fire(e)
	if err := unix.Mkdir(dir+"/before", 0o700); err != nil {
		return fmt.Errorf("mkdir before procRun: %w", err)
	}
	_ = h.Fire(debugEntry(entryRun))
	if err := unix.Mkdir(dir+"/after", 0o700); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("mkdir after procRun: %v", err)
	}
	_ = h.Fire(debugEntry(entryInitDone)) // installed: no exit
	if b, err := e.Logger.Formatter.Format(debugEntry("writing sync")); err != nil || len(b) != 0 {
		return fmt.Errorf("a debug entry formatted: %q %v", b, err)
	}
	info := debugEntry("a warning")
	info.Level = logrus.WarnLevel
	if b, err := e.Logger.Formatter.Format(info); err != nil || !strings.Contains(string(b), "a warning") {
		return fmt.Errorf("a warning not formatted: %q %v", b, err)
	}
	return nil
}

// An init that ends its set-up with the program not installed exits.
func hookUnarmed(string) error {
	h := &hook{prog: denyMkdirat}
	_ = h.Fire(debugEntry(entryInitDone))
	return errors.New("the hook let the init go on")
}

func TestHookInstalls(t *testing.T) {
	if out, err := runChild(t, "hook-installs"); err != nil || !strings.Contains(out, childOK) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestHookRefusesUnfiltered(t *testing.T) {
	out, err := runChild(t, "hook-unarmed")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 255 || !strings.Contains(out, "hutch-runtime: seccomp:") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// Arm leaves an init without a program as it was.
func TestArmWithoutProgram(t *testing.T) {
	level := logrus.GetLevel()
	hooks := len(logrus.StandardLogger().Hooks[logrus.DebugLevel])
	Arm() // fd 3, if open, is go test's own

	if logrus.GetLevel() != level || len(logrus.StandardLogger().Hooks[logrus.DebugLevel]) != hooks {
		t.Error("Arm changed the log without a program")
	}
}
