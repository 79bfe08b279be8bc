package storage

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// growPipe asks for a pipe of pipeSize bytes; a refusal leaves it as it is.
func growPipe(p any) {
	c, ok := p.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
	})
}
