package server

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// listener is a unix stream socket served through the runtime's poller.
// Package net would do the same and cost the shim half a megabyte of
// resident memory (docs/design.md, Performance goals).
type listener struct {
	f  *os.File
	rc syscall.RawConn
}

// listen binds path (replacing a stale socket), mode 0600 before anyone
// can connect.
func listen(path string) (*listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	if err == nil {
		err = os.Chmod(path, 0o600)
	}
	if err == nil {
		err = unix.Listen(fd, 128)
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "listen", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &listener{f: f, rc: rc}, nil
}

// accept waits for a connection; it fails once the listener is closed.
func (l *listener) accept() (*os.File, error) {
	var nfd int
	var aerr error
	err := l.rc.Read(func(fd uintptr) bool {
		nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		return aerr != unix.EAGAIN
	})
	if err != nil {
		return nil, err
	}
	if aerr != nil {
		return nil, aerr
	}
	return os.NewFile(uintptr(nfd), "conn"), nil
}

// Close stops accept.
func (l *listener) Close() error { return l.f.Close() }
