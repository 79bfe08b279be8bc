package main

import (
	"syscall"
	"unsafe"
)

// unixIoctlGetTermios tells whether fd is a terminal (TCGETS succeeds),
// without pulling in x/sys for one call.
func unixIoctlGetTermios(fd int) (*syscall.Termios, error) {
	var t syscall.Termios
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t))); errno != 0 {
		return nil, errno
	}
	return &t, nil
}
