package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hutch-engine/hutch/config"
	"golang.org/x/sys/unix"
)

// instance is the one running daemon of a user: an exclusive flock on
// hutch.lock in the state dir, and the pid file beside it. The lock, not
// the presence of a socket or pid file, decides whether a daemon runs: a
// daemon killed with -9 leaves both behind, and the next one replaces them.
type instance struct {
	lock    *os.File
	pidFile string
	// socket is the daemon's own socket, "" for systemd's.
	socket string
}

// ErrAlreadyRunning is returned when another daemon holds the lock.
var ErrAlreadyRunning = errors.New("hutch daemon is already running")

// acquire takes the lock. ownSocket is false when systemd made the socket:
// the daemon then neither replaces nor removes it.
func acquire(c *config.Config, ownSocket bool) (*instance, error) {
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	// MkdirAll keeps the mode of an existing dir: the state is the user's alone.
	if err := os.Chmod(c.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(c.StateDir, "hutch.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	pidFile := filepath.Join(c.StateDir, "hutch.pid")
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := "unknown"
			if b, err := os.ReadFile(pidFile); err == nil {
				pid = strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("%w (pid %s), serving unix://%s; stop it first (kill %s)", ErrAlreadyRunning, pid, c.Socket, pid)
		}
		return nil, fmt.Errorf("lock: %w", err)
	}
	socket := ""
	if ownSocket {
		socket = c.Socket
		// Whatever a dead daemon left is stale now that we hold the lock.
		if err := os.Remove(c.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, fmt.Errorf("removing stale socket %s: %w", c.Socket, err)
		}
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return &instance{lock: f, pidFile: pidFile, socket: socket}, nil
}

// release removes the socket (its own) and the pid file, then drops the
// lock.
func (in *instance) release() {
	if in.socket != "" {
		os.Remove(in.socket)
	}
	os.Remove(in.pidFile)
	in.lock.Close()
}
