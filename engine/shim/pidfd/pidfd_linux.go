// Package pidfd waits for processes through their pidfds, on the Go
// runtime's poller (no thread is held while a process runs), and asks the
// kernel how a process that another one reaps has ended. The shim's
// reaper, the runtime server and the shim's client of that server share
// it.
package pidfd

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Open returns a pidfd of pid, as a file on the poller.
func Open(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "pidfd"), nil
}

// Wait returns once the process of f (from Open) has exited.
func Wait(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// Readable once the process has exited. The poller forgets a
	// readiness it saw before Read began (Read resets it, as a read that
	// found no data would), so each call asks the pidfd itself: a process
	// that exited before would otherwise be waited for forever.
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}

// Exit waits for the process of f (from Open), which need not be the
// caller's child, to end, and returns its wait status as the kernel keeps
// it for pidfds once the process has been reaped (PIDFD_INFO_EXIT, Linux
// 6.15); ok is false where the kernel cannot tell.
func Exit(f *os.File) (ws unix.WaitStatus, ok bool) {
	Wait(f)
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false
	}
	// The status is there once the new parent has reaped the process.
	for delay := time.Millisecond; delay < 5*time.Second; delay *= 2 {
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
		var ierr error
		if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlPidfdInfo(int(fd), &info) }); err != nil {
			return 0, false
		}
		if ierr != nil && ierr != unix.ESRCH {
			return 0, false
		}
		if ierr == nil && info.Mask&unix.PIDFD_INFO_EXIT != 0 {
			return unix.WaitStatus(info.Exit_code), true
		}
		time.Sleep(delay)
	}
	return 0, false
}

// KernelKeepsExit reports whether this kernel keeps a reaped process's
// status for its pidfds, which Exit reads (Linux 6.15).
func KernelKeepsExit() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	major, rest, _ := strings.Cut(unix.ByteSliceToString(u.Release[:]), ".")
	minor := strings.TrimLeft(rest, "0123456789")
	minor = rest[:len(rest)-len(minor)]
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	return ma > 6 || ma == 6 && mi >= 15
}
