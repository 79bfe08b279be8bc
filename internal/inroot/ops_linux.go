package inroot

import (
	"errors"
	"io"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// split cuts name into the directory to resolve and the last element,
// which is not followed; ok is false when there is no last element to
// leave unfollowed (the root, or a name ending in "/", "." or "..").
func split(name string) (dir, base string, ok bool) {
	dir, base = path.Split(name)
	if base == "" || base == "." || base == ".." {
		return name, "", false
	}
	if dir == "" {
		dir = "."
	}
	return dir, base, true
}

// OpenParent opens the directory holding name's last element (O_PATH)
// and returns that element, for *at calls that must not follow it. A
// name without a last element (the root, "a/..") is an error (EINVAL).
func (r *Root) OpenParent(name string, s Scope) (int, string, error) {
	dir, base, ok := split(name)
	if !ok {
		return -1, "", &os.PathError{Op: "open", Path: name, Err: unix.EINVAL}
	}
	fd, err := r.OpenFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0, s)
	return fd, base, err
}

// Lstat describes name in the root, its last element not followed.
func (r *Root) Lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dir, base, ok := split(name)
	if !ok {
		return r.Stat(name)
	}
	fd, err := r.OpenFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return st, nil
}

// Stat describes what name leads to in the root.
func (r *Root) Stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := r.OpenFd(name, unix.O_PATH, 0, InRoot)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return st, nil
}

// Readlink reads the symlink name in the root (its last element not
// followed).
func (r *Root) Readlink(name string) (string, error) {
	fd, err := r.OpenFd(name, unix.O_PATH|unix.O_NOFOLLOW, 0, InRoot)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", &os.PathError{Op: "readlink", Path: name, Err: unix.EINVAL}
	}
	target, err := readlinkFd(fd)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: name, Err: err}
	}
	return target, nil
}

// Readlinkat reads the symlink name in the directory dir; an empty name
// reads the symlink dir itself is open on (O_PATH|O_NOFOLLOW).
func Readlinkat(dir int, name string) (string, error) {
	target, err := readlinkat(dir, name)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: name, Err: err}
	}
	return target, nil
}

// RemoveAll removes name in the root and, for a directory, everything
// in it; its last element is not followed, nor is anything below it. A
// missing name is no error.
func (r *Root) RemoveAll(name string) error {
	dir, base, err := r.OpenParent(name, InRoot)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	return RemoveAllAt(dir, base)
}

// RemoveAllAt removes name in the directory dir and, for a directory,
// everything in it, never following a symlink. A missing name is no
// error.
func RemoveAllAt(dir int, name string) error {
	return removeAllAt(dir, name, 0)
}

func removeAllAt(dir int, name string, depth int) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return &os.PathError{Op: "unlink", Path: name, Err: err}
	}
	if depth > MaxDepth {
		return &os.PathError{Op: "remove", Path: name, Err: ErrTooDeep}
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	for {
		names, rerr := f.Readdirnames(1024)
		for _, n := range names {
			if err := removeAllAt(fd, n, depth+1); err != nil {
				return err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

// Rename renames oldname to newname, both in the root; neither last
// element is followed.
func (r *Root) Rename(oldname, newname string) error {
	od, ob, err := r.OpenParent(oldname, InRoot)
	if err != nil {
		return err
	}
	defer unix.Close(od)
	nd, nb, err := r.OpenParent(newname, InRoot)
	if err != nil {
		return err
	}
	defer unix.Close(nd)
	if err := unix.Renameat(od, ob, nd, nb); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return nil
}

// Resolve returns the path that name leads to in the root ("/" being the
// root), every symlink on the way evaluated as the scope s does, as far
// as the path exists; what does not exist is joined as it is. It only
// computes a name (Docker's LinkTarget, the directory a dangling symlink
// names); nothing is opened through it.
func (r *Root) Resolve(name string, s Scope) (string, error) {
	defer runtime.KeepAlive(r)
	if s != InRoot && strings.HasPrefix(name, "/") {
		return "", &os.PathError{Op: "resolve", Path: name, Err: ErrEscape}
	}
	var done []string
	todo, _ := components(name)
	cur, owned := r.Fd(), false // the directory done names, or -1
	closeCur := func() {
		if owned {
			unix.Close(cur)
		}
		cur, owned = -1, false
	}
	defer closeCur()
	links := 0
	gone := 0 // the last elements of done that do not exist
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(done) == 0 && s != InRoot {
				return "", &os.PathError{Op: "resolve", Path: name, Err: ErrEscape}
			}
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			gone = max(gone-1, 0)
			closeCur()
			continue
		}
		if gone > 0 {
			done = append(done, c) // below a missing directory
			gone++
			continue
		}
		if cur < 0 {
			fd, err := openIn(r.Fd(), "/"+strings.Join(done, "/"), unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
			if err == nil {
				cur, owned = fd, true
			}
		}
		fd := -1
		var err error = unix.ENOENT
		if cur >= 0 {
			fd, err = unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			closeCur()
			done = append(done, c)
			gone++
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return "", &os.PathError{Op: "stat", Path: name, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkFd(fd)
			unix.Close(fd)
			if err != nil {
				return "", &os.PathError{Op: "readlink", Path: name, Err: err}
			}
			if links++; links > 255 || s == NoSymlinks {
				return "", &os.PathError{Op: "resolve", Path: name, Err: unix.ELOOP}
			}
			if strings.HasPrefix(target, "/") {
				if s != InRoot {
					return "", &os.PathError{Op: "resolve", Path: name, Err: ErrEscape}
				}
				done = nil
				closeCur()
			}
			elems, _ := components(target)
			todo = append(elems, todo...)
		case unix.S_IFDIR:
			closeCur()
			cur, owned = fd, true
			done = append(done, c)
		default:
			unix.Close(fd)
			closeCur()
			done = append(done, c)
			gone++ // nothing is below a file
		}
	}
	return "/" + strings.Join(done, "/"), nil
}

// MkdirAll opens the directory name in the root (O_PATH), making what is
// missing on the way with mode perm (less the umask), symlinks followed
// in the root. With dangling, a symlink to a missing directory gets that
// directory made, as Docker's MkdirAll in a container's root and
// containers/storage do; without, it is an error (ENOENT), as for mkdir
// -p.
func (r *Root) MkdirAll(name string, perm uint32, dangling bool) (int, error) {
	fd, err := r.OpenFd(name, unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	if !dangling {
		return r.mkdirEach(name, perm)
	}
	for range retries {
		resolved, err := r.Resolve(name, InRoot)
		if err != nil {
			return -1, err
		}
		fd, err := r.mkdirResolved(resolved, perm)
		if err != unix.EAGAIN {
			if err != nil {
				return -1, &os.PathError{Op: "mkdir", Path: name, Err: err}
			}
			return fd, nil
		}
	}
	return -1, &os.PathError{Op: "mkdir", Path: name, Err: unix.EAGAIN}
}

// mkdirResolved makes the directories of resolved, a name without
// symlinks, from the root; EAGAIN means an element turned into a symlink
// meanwhile and the name must be resolved again.
func (r *Root) mkdirResolved(resolved string, perm uint32) (int, error) {
	defer runtime.KeepAlive(r)
	pfd, err := unix.Openat(r.Fd(), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	elems, _ := components(resolved)
	for _, e := range elems {
		if err := unix.Mkdirat(pfd, e, perm); err != nil && err != unix.EEXIST {
			unix.Close(pfd)
			return -1, err
		}
		next, err := unix.Openat(pfd, e, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOTDIR || err == unix.ELOOP {
			var st unix.Stat_t
			if unix.Fstatat(pfd, e, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.EAGAIN
			}
		}
		unix.Close(pfd)
		if err != nil {
			return -1, err
		}
		pfd = next
	}
	return pfd, nil
}

// mkdirEach makes the missing directories of name one at a time, each
// in its parent as resolved in the root; a name that exists but does not
// lead to a directory (a dangling symlink) fails.
func (r *Root) mkdirEach(name string, perm uint32) (int, error) {
	elems, _ := components(name)
	pfd, err := r.OpenFd(".", unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
	if err != nil {
		return -1, err
	}
	for i, e := range elems {
		prefix := strings.Join(elems[:i+1], "/")
		fd, err := r.OpenFd(prefix, unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
		if errors.Is(err, unix.ENOENT) && e != ".." {
			if merr := unix.Mkdirat(pfd, e, perm); merr != nil && merr != unix.EEXIST {
				unix.Close(pfd)
				return -1, &os.PathError{Op: "mkdir", Path: prefix, Err: merr}
			}
			fd, err = r.OpenFd(prefix, unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
		}
		unix.Close(pfd)
		if err != nil {
			return -1, err
		}
		pfd = fd
	}
	return pfd, nil
}

// Chmodat changes the mode of base in the directory dir without
// following it: through an O_PATH descriptor of it and its /proc/self/fd
// link, which names that very inode (fchmodat has no AT_SYMLINK_NOFOLLOW
// before Linux 6.6, and a FIFO or device cannot be opened for I/O to
// fchmod). A symlink, which may have replaced the file meanwhile, is left
// alone. The error is an *os.PathError naming name.
func Chmodat(dir int, base, name string, mode uint32) error {
	fd, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}
