package inroot

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Scope says how a lookup treats symlinks and ".." that would leave the
// root.
type Scope uint8

const (
	// InRoot resolves as if the root were "/".
	InRoot Scope = iota
	// Beneath refuses, with ErrEscape, a ".." or symlink that leads out
	// of the root; absolute symlinks always do.
	Beneath
	// NoSymlinks refuses any symlink on the way (ELOOP) and leaving the
	// root by ".." (ErrEscape).
	NoSymlinks
)

// ErrEscape is the error (errors.Is) of a Beneath or NoSymlinks lookup
// that would leave the root.
var ErrEscape error = unix.EXDEV

// MaxLinks bounds the symlinks one lookup follows, as the kernel does.
const MaxLinks = 40

// MaxDepth bounds how deep Walk and RemoveAllAt descend: every level
// holds a directory descriptor open, and a tree must not exhaust them.
const MaxDepth = 512

// ErrTooDeep is the error (errors.Is) of a Walk or RemoveAll that met
// directories nested deeper than MaxDepth.
var ErrTooDeep = errors.New("directories nested deeper than 512 levels")

// Root is an open directory that lookups stay inside.
type Root struct {
	f    *os.File // owns fd: closes it, also when the Root is dropped
	fd   int
	name string
}

// Open opens the directory dir (itself resolved as the host sees it) as
// a root.
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return FromFd(fd, dir), nil
}

// FromFd makes a root of fd, an open directory, which the root then
// owns; name is its path for messages.
func FromFd(fd int, name string) *Root {
	return &Root{f: os.NewFile(uintptr(fd), name), fd: fd, name: name}
}

// Close closes the root's descriptor.
func (r *Root) Close() error { return r.f.Close() }

// Fd is the root's descriptor, valid until Close.
func (r *Root) Fd() int { return r.fd }

// Name is the path the root was opened by, for messages.
func (r *Root) Name() string { return r.name }

// Open opens name in the root as InRoot resolves it; flags and mode are
// open(2)'s (O_CLOEXEC is always added). O_NOFOLLOW leaves a last
// symlink unfollowed, as open(2) does.
func (r *Root) Open(name string, flags int, mode uint32) (*os.File, error) {
	fd, err := r.OpenFd(name, flags, mode, InRoot)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenFd opens name in the root with scope s and returns the descriptor.
// name is relative to the root (a leading "/" names the root too). The
// error is an *os.PathError holding the errno.
func (r *Root) OpenFd(name string, flags int, mode uint32, s Scope) (int, error) {
	// The descriptor is used as an int: r (whose finalizer closes it)
	// must stay reachable until the lookup is over.
	defer runtime.KeepAlive(r)
	fd, err := openIn(r.fd, name, flags, mode, s)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}

// OpenAt opens name below the directory dirfd with scope s, as
// Root.OpenFd does, for code that holds the root as a bare descriptor.
// The error is the bare errno.
func OpenAt(dirfd int, name string, flags int, mode uint32, s Scope) (int, error) {
	return openIn(dirfd, name, flags, mode, s)
}

// retries bounds the lookups retried after EAGAIN: a rename raced with a
// "..", which RESOLVE_IN_ROOT and RESOLVE_BENEATH are strict about.
const retries = 32

// openIn opens name below dirfd: openat2 when it works, else the walk.
func openIn(dirfd int, name string, flags int, mode uint32, s Scope) (int, error) {
	if name == "" {
		name = "."
	}
	flags |= unix.O_CLOEXEC
	if openat2OK() {
		fd, err := openat2Loop(dirfd, name, flags, mode, s)
		if err != unix.EAGAIN {
			return fd, err
		}
		// Renames keep racing with the lookup: the walk has its own
		// check of where it ended.
	}
	var err error
	for range retries {
		var fd int
		fd, err = walkOpen(dirfd, name, flags, mode, s)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, err
}

func openat2Loop(dirfd int, name string, flags int, mode uint32, s Scope) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS}
	if flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		how.Mode = uint64(mode)
	}
	switch s {
	case InRoot:
		how.Resolve |= unix.RESOLVE_IN_ROOT
	case Beneath:
		how.Resolve |= unix.RESOLVE_BENEATH
	case NoSymlinks:
		how.Resolve |= unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS
	}
	var err error
	for range retries {
		var fd int
		fd, err = unix.Openat2(dirfd, name, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, err
}

// forceWalk, when set (by tests), makes every lookup take the user-space
// walk.
var forceWalk atomic.Bool

var openat2Works = sync.OnceValue(func() bool {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT}
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &how)
	if err != nil {
		// ENOSYS: before Linux 5.6; EPERM: a seccomp filter that does
		// not know the call.
		return !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM)
	}
	unix.Close(fd)
	return true
})

func openat2OK() bool { return !forceWalk.Load() && openat2Works() }

// HasOpenat2 reports whether lookups use openat2 (else the walk).
func HasOpenat2() bool { return openat2OK() }
