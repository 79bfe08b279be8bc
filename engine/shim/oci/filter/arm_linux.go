package filter

import (
	"fmt"
	"os"
	"strings"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// libcontainer's debug log entries (runc v1.5) that mark the init's steps:
// it has read procRun, the parent's answer to procReady (sync.go's
// doReadSync; syncT's String); it is about to end its set-up, in the
// standard and the setns (exec) init.
const (
	entryRun      = "read sync type:procRun"
	entryInitDone = "init: closing the pipe to signal completion"
	entryExecDone = "setns_init: about to exec"
)

// Arm runs in the container's init ("hutch-runtime init") before
// libcontainer.Init: when the runtime passed a program at Fd, it marks Fd
// close-on-exec (the command must not inherit it; libcontainer leaves the
// files it was passed open) and hooks libcontainer's log to install the
// program once the init has read procRun. An init given no program is left
// as it is.
func Arm() {
	p, err := readFd(Fd)
	if err != nil {
		fail(err)
	}
	if p == nil {
		return
	}
	unix.CloseOnExec(Fd)
	// libcontainer sets the init's level only when the runtime passes one
	// (Process.LogLevel); the hook needs its debug entries.
	_ = os.Unsetenv("_LIBCONTAINER_LOGLEVEL")
	logrus.SetLevel(logrus.DebugLevel)
	logrus.AddHook(&hook{prog: p})
}

// hook installs prog when libcontainer logs entryRun, and stops an init
// that reaches the end of its set-up without it.
type hook struct {
	prog      *Program
	installed bool
	quiet     bool
	next      logrus.Formatter
}

// Format is libcontainer's formatter for every entry but the debug ones,
// which it drops: raised to debug for the hook alone, the init would
// otherwise encode each to JSON for the runtime to decode and drop.
func (h *hook) Format(e *logrus.Entry) ([]byte, error) {
	if e.Level == logrus.DebugLevel {
		return nil, nil
	}
	return h.next.Format(e)
}

func (h *hook) Levels() []logrus.Level { return []logrus.Level{logrus.DebugLevel} }

func (h *hook) Fire(e *logrus.Entry) error {
	if !h.quiet {
		// libcontainer has set its formatter by its first entry: the
		// debug entries the hook needs are not the log's, which they
		// were not before (Info is libcontainer's level).
		h.quiet = true
		h.next = e.Logger.Formatter
		e.Logger.SetFormatter(h)
	}
	switch {
	case h.installed:
	case e.Message == entryRun:
		if err := h.prog.install(); err != nil {
			fail(err)
		}
		h.installed = true
	case e.Message == entryInitDone, e.Message == entryExecDone:
		fail(fmt.Errorf("the init did not reach the point where it installs the seccomp filter (%q)", entryRun))
	}
	return nil
}

// fail ends an init that cannot install its filter rather than let it run
// the command without. Its stderr is the container's, and the shim reports
// an init that died before the start; the message also goes to the
// runtime's log through libcontainer's log pipe.
func fail(err error) {
	msg := "hutch-runtime: seccomp: " + strings.TrimSpace(err.Error())
	logrus.Error(msg)
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(255)
}
