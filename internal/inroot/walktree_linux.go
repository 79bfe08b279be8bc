package inroot

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// WalkFunc is called for every file of a walk: name is the file in the
// open directory dir (for *at calls that never follow it), rel its path
// from where the walk started ("" for that file itself, else
// slash-separated), st its lstat. dir is valid only during the call.
type WalkFunc func(dir int, name, rel string, st *unix.Stat_t) error

// Walk walks the tree at name in the root (name itself resolved InRoot
// except for its last element, which is not followed), a directory
// before what it holds, names sorted, never following a symlink.
func (r *Root) Walk(name string, fn WalkFunc) error {
	dir, base, ok := split(name)
	if !ok {
		base = "."
	}
	fd, err := r.OpenFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0, InRoot)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return WalkAt(fd, base, fn)
}

// WalkAt walks the tree at name in the directory dir as Walk does.
func WalkAt(dir int, name string, fn WalkFunc) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	return walk(dir, name, "", &st, fn, 0)
}

func walk(dir int, name, rel string, st *unix.Stat_t, fn WalkFunc, depth int) error {
	err := fn(dir, name, rel, st)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || err != nil {
		return err
	}
	if depth >= MaxDepth {
		return &os.PathError{Op: "walk", Path: rel, Err: ErrTooDeep}
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
		return nil // removed, or replaced by something else, meanwhile
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	// The directory opened must be the one described: else it changed
	// meanwhile, and what it holds is not walked.
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		return nil
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: rel, Err: err}
	}
	slices.Sort(names)
	for _, n := range names {
		var cst unix.Stat_t
		if err := unix.Fstatat(fd, n, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed meanwhile
			}
			return &os.PathError{Op: "lstat", Path: n, Err: err}
		}
		crel := n
		if rel != "" {
			crel = rel + "/" + n
		}
		if err := walk(fd, n, crel, &cst, fn, depth+1); err != nil {
			return err
		}
	}
	return nil
}
