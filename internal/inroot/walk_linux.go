package inroot

import (
	"strings"

	"golang.org/x/sys/unix"
)

// walker is the user-space lookup: a stack of the directories opened on
// the way down from the root, which ".." pops (the file system's ".." is
// never followed).
type walker struct {
	root    int
	scope   Scope
	stack   []int
	links   int
	crossed bool // through a symlink or "..": where the walk is must be checked
}

func (w *walker) cur() int {
	if len(w.stack) == 0 {
		return w.root
	}
	return w.stack[len(w.stack)-1]
}

func (w *walker) pop() {
	unix.Close(w.stack[len(w.stack)-1])
	w.stack = w.stack[:len(w.stack)-1]
}

func (w *walker) closeAll() {
	for len(w.stack) > 0 {
		w.pop()
	}
}

// components splits name into its elements, "" and "." dropped; dir
// reports a name that ends in "/", "/." or "/.." (or is "." or ".."):
// its last element is followed and must be a directory.
func components(name string) (elems []string, dir bool) {
	for e := range strings.SplitSeq(name, "/") {
		if e != "" && e != "." {
			elems = append(elems, e)
		}
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	dir = last == "" || last == "." || last == ".."
	return elems, dir
}

// link takes the symlink read at a step of the walk: its elements go
// before those left. dir reports a target that names a directory ("a/"):
// when the link is the name's last element, that holds for the name.
func (w *walker) link(target string, todo []string) (elems []string, dir bool, err error) {
	if w.links++; w.links > MaxLinks || w.scope == NoSymlinks {
		return nil, false, unix.ELOOP
	}
	if target == "" {
		return nil, false, unix.ENOENT
	}
	w.crossed = true
	if target[0] == '/' {
		if w.scope != InRoot {
			return nil, false, ErrEscape
		}
		w.closeAll()
	}
	elems, dir = components(target)
	return append(elems, todo...), dir, nil
}

// dirFlags gives the flags for a name that must end at a directory: as
// open(2), O_CREAT there is EISDIR, and the last element is followed.
func dirFlags(flags int) (int, error) {
	if flags&unix.O_CREAT != 0 {
		return 0, unix.EISDIR
	}
	return flags&^unix.O_NOFOLLOW | unix.O_DIRECTORY, nil
}

// up takes a "..".
func (w *walker) up() error {
	w.crossed = true
	if len(w.stack) == 0 {
		if w.scope != InRoot {
			return ErrEscape
		}
		return nil // ".." of the root is the root
	}
	w.pop()
	return nil
}

// walkOpen opens name below root as openat2 would with the scope s.
func walkOpen(root int, name string, flags int, mode uint32, s Scope) (int, error) {
	if s != InRoot && strings.HasPrefix(name, "/") {
		return -1, ErrEscape // as RESOLVE_BENEATH: the host's "/" is not the root
	}
	w := &walker{root: root, scope: s}
	defer w.closeAll()
	todo, dirOnly := components(name)
	if dirOnly {
		var err error
		if flags, err = dirFlags(flags); err != nil {
			return -1, err
		}
	}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if err := w.up(); err != nil {
				return -1, err
			}
			continue
		}
		if len(todo) > 0 {
			var err error
			if todo, err = w.step(c, todo); err != nil {
				return -1, err
			}
			continue
		}
		fd, target, err := w.last(c, flags, mode)
		if err != nil || target == nil {
			if err == nil {
				err = w.check()
			}
			if err != nil && fd >= 0 {
				unix.Close(fd)
				fd = -1
			}
			return fd, err
		}
		// todo is empty: the link's target ends the name.
		var dir bool
		if todo, dir, err = w.link(*target, todo); err != nil {
			return -1, err
		}
		if dir {
			if flags, err = dirFlags(flags); err != nil {
				return -1, err
			}
		}
	}
	// The name ends at a directory of the stack (or the root).
	if err := w.check(); err != nil {
		return -1, err
	}
	return unix.Openat(w.cur(), ".", flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW), 0)
}

// step goes down into the directory c, or reads the symlink c.
func (w *walker) step(c string, todo []string) ([]string, error) {
	fd, err := unix.Openat(w.cur(), c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		w.stack = append(w.stack, fd)
		return todo, nil
	case unix.S_IFLNK:
		target, err := readlinkFd(fd)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		todo, _, err = w.link(target, todo)
		return todo, err
	}
	unix.Close(fd)
	return nil, unix.ENOTDIR
}

// last opens the last element c with flags; if it is a symlink to
// follow, it returns the link's text instead.
func (w *walker) last(c string, flags int, mode uint32) (int, *string, error) {
	follow := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	if !follow {
		fd, err := unix.Openat(w.cur(), c, flags, mode)
		return fd, nil, err
	}
	fd, err := unix.Openat(w.cur(), c, flags|unix.O_NOFOLLOW, mode)
	if err == nil {
		if flags&unix.O_PATH == 0 {
			return fd, nil, nil
		}
		// O_PATH|O_NOFOLLOW opens a symlink itself.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return fd, nil, err
		}
		target, err := readlinkFd(fd)
		unix.Close(fd)
		return -1, &target, err
	}
	if err != unix.ELOOP && err != unix.ENOTDIR {
		return -1, nil, err
	}
	// ELOOP (or ENOTDIR for O_DIRECTORY): is c a symlink, read through
	// its own descriptor?
	lfd, lerr := unix.Openat(w.cur(), c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if lerr != nil {
		return -1, nil, err
	}
	defer unix.Close(lfd)
	target, lerr := readlinkFd(lfd)
	if lerr != nil {
		return -1, nil, err // not a symlink
	}
	return -1, &target, nil
}

// check makes sure that the directory the walk is in is still under the
// root after the walk took a "..": a rename may have moved a directory
// of its stack out of the root meanwhile. It walks the ".." links of the
// file system up to the root or to the top of the file system tree.
func (w *walker) check() error {
	if !w.crossed || len(w.stack) == 0 {
		return nil
	}
	var root unix.Stat_t
	if err := unix.Fstat(w.root, &root); err != nil {
		return err
	}
	fd, err := unix.Openat(w.cur(), ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for range 4096 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Dev == root.Dev && st.Ino == root.Ino {
			return nil
		}
		up, err := unix.Openat(fd, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		var ust unix.Stat_t
		if err := unix.Fstat(up, &ust); err != nil {
			unix.Close(up)
			return err
		}
		unix.Close(fd)
		fd = up
		if ust.Dev == st.Dev && ust.Ino == st.Ino {
			break // the top of the tree: the root is not above
		}
	}
	return unix.EAGAIN
}

// readlinkFd reads the symlink fd was opened on (O_PATH|O_NOFOLLOW).
func readlinkFd(fd int) (string, error) {
	return readlinkat(fd, "")
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
