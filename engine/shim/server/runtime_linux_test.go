package server

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		line string
		want unix.WaitStatus
		ok   bool
	}{
		{"status 768\n", 3 << 8, true},
		{"status 9", 9, true},
		{"status 0\n", 0, true},
		{"", 0, false},
		{"status \n", 0, false},
		{"status x\n", 0, false},
		{"{\"message\":\"x\"}\n", 0, false},
	} {
		ws, ok := parseStatus(tc.line)
		if ok != tc.ok || ok && ws != tc.want {
			t.Errorf("parseStatus(%q) = %v, %v; want %v, %v", tc.line, ws, ok, tc.want, tc.ok)
		}
	}
}

// pidfdExitKnown reports whether the kernel records a reaped process's
// status for its pidfds (PIDFD_INFO_EXIT, Linux 6.15).
func pidfdExitKnown(t *testing.T) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	major, rest, _ := strings.Cut(unix.ByteSliceToString(u.Release[:]), ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(strings.TrimRightFunc(minor, func(r rune) bool { return r < '0' || r > '9' }))
	return ma > 6 || ma == 6 && mi >= 15
}

// The status of a process that another reaps: as it ended where the
// kernel tells, else 255.
func TestExitOfPidfd(t *testing.T) {
	known := pidfdExitKnown(t)
	for _, tc := range []struct {
		script string
		want   func(unix.WaitStatus) bool
	}{
		{"exit 7", func(ws unix.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 7 }},
		{"kill -9 $$", func(ws unix.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGKILL }},
	} {
		cmd := exec.Command("/bin/sh", "-c", "read x; "+tc.script)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Its parent (this test's os/exec) reaps it; exitOfPidfd only
		// watches.
		go func() { _ = cmd.Wait() }()
		stdin.Write([]byte("go\n"))
		ws := exitOfPidfd(pidfd)
		switch {
		case known && !tc.want(ws):
			t.Errorf("%s: status %#x", tc.script, int(ws))
		case !known && (!ws.Exited() || ws.ExitStatus() != 255):
			t.Errorf("%s: status %#x on a kernel without PIDFD_INFO_EXIT, want exit 255", tc.script, int(ws))
		}
	}
	if ws := exitOfPidfd(-1); !ws.Exited() || ws.ExitStatus() != 255 {
		t.Errorf("no pidfd: status %#x, want exit 255", int(ws))
	}
}
