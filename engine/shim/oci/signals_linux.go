//go:build !mips && !mipsle && !mips64 && !mips64le

package oci

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultSignals gives SIGHUP and SIGINT their default action again where
// they are ignored. hutch-runtime calls it as the container's init, before
// libcontainer executes the container's command.
//
// An ignored signal stays ignored across execve, and Go's runtime keeps
// those two ignored in every process it starts when they were ignored at
// its own start (unless it catches them itself): a daemon started with
// nohup handed SIGHUP down through the shim and hutch-runtime to every
// container, where a shell cannot trap a signal ignored when it started
// (POSIX). An ignored SIGINT would be a lost Ctrl-C, and no
// KeyboardInterrupt in Python. Docker's containers do not see how the
// daemon was started either: under systemd nothing is ignored.
func DefaultSignals() {
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		var old kernelSigaction
		if rtSigaction(sig, nil, &old) != nil || old.handler != sigIgn {
			continue
		}
		_ = rtSigaction(sig, &kernelSigaction{handler: sigDfl}, nil)
	}
}

const (
	sigDfl = 0
	sigIgn = 1
)

// kernelSigaction is the kernel's struct sigaction of rt_sigaction(2) on
// the architectures whose layout is the generic one (amd64, arm64, and
// every other but mips): handler, flags, restorer, mask.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

func rtSigaction(sig unix.Signal, act, old *kernelSigaction) error {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), unsafe.Sizeof(old.mask), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
