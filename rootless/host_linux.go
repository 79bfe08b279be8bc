package rootless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/hutch-engine/hutch/internal/logging"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Handover is what `hutch daemon` hands over to hutch-ns when it execs it on
// the host: from then on the small hutch-ns binary is the daemon's host
// process (same pid, same lock, same stdio), so the process that only
// waits and forwards does not map the whole engine binary (docs/design.md, Performance goals).
type Handover struct {
	Parent ParentOptions `json:"parent"`
	// LockFD is the instance lock (an flock on hutch.lock), kept open
	// across the exec: the lock lives as long as hutch-ns.
	LockFD int `json:"lock_fd"`
	// PidFile and Socket are removed when the daemon stops.
	PidFile  string `json:"pid_file"`
	Socket   string `json:"socket"`
	LogLevel string `json:"log_level"`
	// Keeper, when set, is the daemon's state dir: hutch-ns then keeps
	// the namespaces for a live-restore daemon (KeepMain) instead of
	// being its host process; LockFD, PidFile and Socket are unused.
	Keeper string `json:"keeper,omitempty"`
}

// ExecHost replaces this process with hutch-ns at bin. It returns only
// when the exec fails.
func ExecHost(bin string, h Handover) error {
	h.Parent.Logger = nil
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := unix.FcntlInt(uintptr(h.LockFD), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("lock fd: %w", err)
	}
	env := append(os.Environ(), envHost+"="+string(b))
	err = syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	unix.FcntlInt(uintptr(h.LockFD), unix.F_SETFD, unix.FD_CLOEXEC)
	return fmt.Errorf("exec %s: %w", bin, err)
}

// Main is hutch-ns: the daemon's host process after ExecHost (rootlesskit
// parent), or, started by that parent inside the new namespaces, the
// child, which execs the engine binary at once. It returns the exit code.
func Main() int {
	logrus.SetLevel(logrus.WarnLevel)
	if os.Getenv("HUTCH_DEBUG") != "" {
		logrus.SetLevel(logrus.DebugLevel)
	}
	if CurrentRole() == Child {
		engine := os.Getenv(envEngine)
		os.Unsetenv(envEngine)
		err := syscall.Exec(engine, append([]string{engine}, os.Args[1:]...), os.Environ())
		fmt.Fprintf(os.Stderr, "hutch: namespace child: exec %q: %v\n", engine, err)
		return 1
	}
	h, err := inheritedHost()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: %v\n", err)
		return 2
	}
	if h.Keeper != "" {
		return keepMain(h)
	}
	// Nothing below this process may hold the lock: shims outlive it.
	unix.FcntlInt(uintptr(h.LockFD), unix.F_SETFD, unix.FD_CLOEXEC)
	defer func() {
		os.Remove(h.Socket)
		os.Remove(h.PidFile)
	}()
	h.Parent.Logger = logging.New(h.LogLevel)
	return exitCode(RunParent(context.Background(), h.Parent))
}

// exitCode is hutch-ns's exit status for RunParent's error.
func exitCode(err error) int {
	var ee interface{ ExitCode() int }
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		// The engine already logged why it stopped.
		fmt.Fprintf(os.Stderr, "hutch: engine exited with status %d\n", ee.ExitCode())
		return ee.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "hutch: %v\n", err)
		return 1
	}
}

func inheritedHost() (Handover, error) {
	var h Handover
	v := os.Getenv(envHost)
	if v == "" {
		return h, errors.New("hutch-ns is started by `hutch daemon`, not by hand")
	}
	os.Unsetenv(envHost)
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		return h, fmt.Errorf("%s: %w", envHost, err)
	}
	return h, nil
}
