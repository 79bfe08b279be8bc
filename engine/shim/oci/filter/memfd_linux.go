package filter

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Fd is where the init finds the program: the first of libcontainer's
// Process.ExtraFiles, which the runtime reserves for it.
const Fd = 3

// memfdName names the memfd, for whoever lists the init's files.
const memfdName = "hutch-seccomp"

// seals make the memfd's content final before the init reads it.
const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// File returns a sealed memfd holding the encoded program, to pass to the
// init as its Fd; the caller closes it once the init is started.
func File(encoded []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(memfdName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("seccomp program: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), memfdName)
	if _, err := f.Write(encoded); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp program: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp program: seal: %w", err)
	}
	return f, nil
}

// readFd reads the program at fd if fd is a sealed memfd that holds one
// (libcontainer's own files there are pipes, sockets and fifos); nil if
// it is not.
func readFd(fd int) (*Program, error) {
	s, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || s&seals != seals {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size <= 0 || st.Size > int64(len(magic)+8+8*maxInsns) {
		return nil, fmt.Errorf("seccomp program of %d bytes", st.Size)
	}
	b := make([]byte, st.Size)
	if n, err := unix.Pread(fd, b, 0); err != nil || n != len(b) {
		return nil, fmt.Errorf("reading the seccomp program: %d bytes, %v", n, err)
	}
	if string(b[:min(len(b), len(magic))]) != magic {
		return nil, nil
	}
	return Decode(b)
}

// install loads p for the calling thread (the init's, which libcontainer
// keeps locked and which execs the command), as runc's patchbpf does:
// prctl without flags, seccomp(2) with them.
func (p *Program) install() error {
	fprog := unix.SockFprog{Len: uint16(len(p.Insns)), Filter: &p.Insns[0]}
	var errno unix.Errno
	if p.Flags == 0 {
		_, _, errno = unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0, 0)
	} else {
		_, _, errno = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(p.Flags), uintptr(unsafe.Pointer(&fprog)))
	}
	runtime.KeepAlive(p)
	if errno != 0 {
		return fmt.Errorf("loading the seccomp filter: %w", errno)
	}
	return nil
}
