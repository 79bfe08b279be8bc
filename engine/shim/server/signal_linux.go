package server

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A signal sent to a container must reach its command, as on Docker,
// where the start returns once the command runs and a signal sent after
// it is the command's to handle. Two moments lose one here unless the
// shim waits them out:
//
//   - After the init has written to the exec fifo it is still
//     hutch-runtime for about a millisecond, a Go program that catches
//     every signal, until it execs the command: a signal then is taken by
//     Go's handler or discarded by the exec. So the start returns once
//     the init has exec'd the command (awaitExec).
//   - A pid namespace's init gets no signal whose action is the default:
//     the kernel discards it, since pid 1 cannot be killed from within.
//     A command that handles SIGTERM installs its handler in its first
//     milliseconds; a signal sent before that is discarded, when on
//     Docker (whose start and kill take that long themselves) the
//     command has its handler by then. So for commandSettle after the
//     exec, a signal that the command would not get yet waits until it
//     catches, ignores or blocks it (awaitHandler). Past that, a signal
//     the command does not handle is discarded, as on Docker.

// execBound bounds the wait for the init's exec of the command: an init
// that neither execs nor exits within it is past waiting for.
const execBound = 10 * time.Second

// commandSettle is how long after its exec the container's command is
// taken to be still setting up its signal handlers.
const commandSettle = 250 * time.Millisecond

// fileID identifies a file: the executable of a process.
type fileID struct{ dev, ino uint64 }

// exeOf identifies the executable that process pid runs.
func exeOf(pid int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+itoa(pid)+"/exe", &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

// awaitExec returns once the init, released, no longer runs initExe (the
// hutch-runtime binary it ran when created): it has exec'd the command,
// or ended. There is no event for another process's exec, so it looks
// again after a pause that starts at tens of microseconds (the exec
// usually comes within a millisecond) and grows.
func (s *server) awaitExec(initExe fileID) {
	pause := 50 * time.Microsecond
	deadline := time.Now().Add(execBound)
	for {
		exe, err := exeOf(s.pid)
		if err != nil || exe != initExe {
			return // exec'd, or ended (a zombie has no exe)
		}
		select {
		case <-s.initDone:
			return
		default:
		}
		if time.Now().After(deadline) {
			s.log.warn("the container's init has not exec'd its command", "after", execBound.String())
			return
		}
		// A plain sleep: the poller's timers sleep a millisecond at least.
		_ = unix.Nanosleep(&unix.Timespec{Nsec: pause.Nanoseconds()}, nil)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// awaitHandler returns once the container's command would get sig: at
// once unless the kernel would discard it (discards), else when the
// command catches, ignores or blocks it, ends, or has run for
// commandSettle.
func (s *server) awaitHandler(sig unix.Signal) {
	s.mu.Lock()
	deadline := s.execAt.Add(commandSettle)
	s.mu.Unlock()
	for time.Now().Before(deadline) && discards(s.pid, sig) {
		select {
		case <-s.initDone:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// discards reports whether the kernel would discard sig sent to process
// pid: it is the init of its pid namespace, and neither catches, ignores
// nor blocks sig (SIGKILL and SIGSTOP from outside always get through).
// A process it cannot read is taken to get the signal.
func discards(pid int, sig unix.Signal) bool {
	if sig == unix.SIGKILL || sig == unix.SIGSTOP {
		return false
	}
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
	if err != nil {
		return false
	}
	nsInit, handled := false, false
	bit := uint64(1) << (uint(sig) - 1)
	for line := range bytes.Lines(b) {
		key, val, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		switch string(key) {
		case "NSpid":
			// The pid in each namespace, the innermost last.
			f := bytes.Fields(val)
			nsInit = len(f) > 0 && string(f[len(f)-1]) == "1"
		case "SigBlk", "SigIgn", "SigCgt":
			mask, err := strconv.ParseUint(string(val), 16, 64)
			if err != nil || mask&bit != 0 {
				handled = true
			}
		}
	}
	return nsInit && !handled
}
