package server

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		ws   unix.WaitStatus // as wait4 encodes it
		want int
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3 << 8, 3},
		{"exit 255", 255 << 8, 255},
		{"SIGKILL", unix.WaitStatus(unix.SIGKILL), 137},
		{"SIGTERM", unix.WaitStatus(unix.SIGTERM), 143},
		{"SIGSEGV with core", unix.WaitStatus(unix.SIGSEGV) | 0x80, 139},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.ws); got != tc.want {
				t.Errorf("exitCode = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestReaperSettle runs in a child process of the test binary: the reaper
// waits for any child of its process, and never stops.
func TestReaperSettle(t *testing.T) {
	if os.Getenv("HUTCH_TEST_REAPER") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReaperSettle$", "-test.v")
		cmd.Env = append(os.Environ(), "HUTCH_TEST_REAPER=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	r := newReaper()
	sh := func(script string) func() (int, error) {
		return func() (int, error) {
			p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", script}, &os.ProcAttr{})
			if err != nil {
				return 0, err
			}
			pid := p.Pid
			_ = p.Release()
			return pid, nil
		}
	}
	status := func(ch <-chan unix.WaitStatus) int {
		t.Helper()
		select {
		case ws := <-ch:
			return exitCode(ws)
		case <-time.After(10 * time.Second):
			t.Fatal("no status")
		}
		return -1
	}

	// A settled child is reaped after its settle time.
	_, ch, err := r.spawn(sh("exit 3"), 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := status(ch); got != 3 {
		t.Errorf("settled child: exit code %d, want 3", got)
	}

	// One whose settle time is far off is reaped by the pass that another
	// child's exit wakes.
	pid, late, err := r.spawn(sh("exit 4"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Until it has exited; 0: a stray pass reaped it already, and its
	// status waits on the channel.
	for st := procState(pid); st != 'Z' && st != 0; st = procState(pid) {
		time.Sleep(time.Millisecond)
	}
	_, ch, err = r.spawn(sh("exit 5"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := status(ch); got != 5 {
		t.Errorf("child reaped at once: exit code %d, want 5", got)
	}
	if got := status(late); got != 4 {
		t.Errorf("child reaped on another's pass: exit code %d, want 4", got)
	}
}

// procState is the state letter of pid in /proc/pid/stat, 0 once pid is
// gone.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the
	// last parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
