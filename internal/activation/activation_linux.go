// Package activation takes the API socket that systemd (or
// systemd-socket-activate) opened for the daemon, as sd_listen_fds(3)
// does, and carries it down the daemon's process tree to the engine.
//
// systemd names the process it started in LISTEN_PID; in a rootless
// daemon that process execs hutch-ns, which starts the engine in the
// namespaces under another pid. So the host process takes the socket
// (Take), moves it to a descriptor out of the way of the ones the
// namespace child is given (Pass) and names it in the environment; the
// engine takes it from there (Inherited). The socket itself stays
// systemd's: the daemon never removes its path, and a connection that
// arrives after the daemon stopped accepting waits in it for the next
// start.
package activation

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// listenFDsStart is SD_LISTEN_FDS_START: systemd passes its sockets from
// descriptor 3 on.
const listenFDsStart = 3

// passFDMin is the lowest descriptor Pass moves the socket to. The
// processes below the host process are started with a few descriptors
// of their own from 3 on (rootlesskit's pipes), which would take the
// socket's place at a low number.
const passFDMin = 64

// envFD names the descriptor Pass left open for the engine.
const envFD = "_HUTCH_LISTEN_FD"

// ErrSocket is a descriptor from systemd that hutch cannot serve on.
var ErrSocket = errors.New("socket from systemd")

// Take returns the listening socket systemd passed to this process, or
// nil when it passed none (LISTEN_PID names another process, or the
// variables are unset). The LISTEN_* variables are removed, as
// sd_listen_fds(1) does, so that no process started later takes the
// socket for its own. hutch serves one socket: a unix stream socket.
func Take() (*os.File, error) {
	pid, fds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	if fds == "" {
		return nil, nil
	}
	for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(k)
	}
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		// Meant for another process (one that started this one and
		// kept its environment).
		return nil, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%w: LISTEN_FDS=%q is not a count", ErrSocket, fds)
	}
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, fmt.Errorf("%w: got %d sockets (%s), hutch serves one: give hutch.socket one ListenStream", ErrSocket, n, names)
	}
	name := "hutch.socket"
	if names != "" {
		name = strings.Split(names, ":")[0]
	}
	return check(listenFDsStart, name)
}

// check makes fd close-on-exec and returns it as a file when it is a
// listening unix stream socket.
func check(fd int, name string) (*os.File, error) {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("%w %s (fd %d): %v", ErrSocket, name, fd, err)
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("%w %s (fd %d): not a socket: %v", ErrSocket, name, fd, err)
	}
	listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if err != nil {
		return nil, fmt.Errorf("%w %s (fd %d): %v", ErrSocket, name, fd, err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("%w %s (fd %d): %v", ErrSocket, name, fd, err)
	}
	if _, ok := sa.(*unix.SockaddrUnix); !ok || typ != unix.SOCK_STREAM || listening != 1 {
		return nil, fmt.Errorf("%w %s (fd %d): hutch serves a listening unix stream socket (ListenStream=%%t/hutch.sock)", ErrSocket, name, fd)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// Path is the path the socket is bound to.
func Path(f *os.File) (string, error) {
	sa, err := unix.Getsockname(int(f.Fd()))
	if err != nil {
		return "", err
	}
	u, ok := sa.(*unix.SockaddrUnix)
	if !ok || u.Name == "" || u.Name[0] == '@' || u.Name[0] == 0 {
		return "", fmt.Errorf("%w: not bound to a path", ErrSocket)
	}
	return u.Name, nil
}

// Pass leaves a copy of f open across exec for the engine, at a high
// descriptor named in the environment of this process (and so of those
// it execs and starts). Every process of the tree inherits it until the
// engine takes it (Inherited) and marks it close-on-exec.
func Pass(f *os.File) error {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD, passFDMin)
	if err != nil {
		return fmt.Errorf("passing the socket from systemd: %w", err)
	}
	return os.Setenv(envFD, strconv.Itoa(fd))
}

// Inherited returns the socket Pass left open for this process, or nil.
// It is marked close-on-exec at once: the engine's children (shims,
// hutch-buildkit) must not hold it.
func Inherited() (*os.File, error) {
	v := os.Getenv(envFD)
	if v == "" {
		return nil, nil
	}
	os.Unsetenv(envFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < passFDMin {
		return nil, fmt.Errorf("%w: %s=%q", ErrSocket, envFD, v)
	}
	return check(fd, "hutch.socket")
}
