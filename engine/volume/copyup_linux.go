package volume

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/inroot"
)

// CopyUp fills the volume directory dir with what the container's rootfs
// has at target (an absolute path inside the container), as Docker does when
// an empty volume is mounted over image content: images ship defaults where
// they declare a VOLUME and expect them to show through the first time.
// target is resolved as if rootfs were "/" and the tree under it is walked
// through directory descriptors, never following a symlink (package
// inroot), so no symlink of the image leads out of it; what is made in dir
// is made with *at calls in directories opened without following a
// symlink, so nothing is written outside dir even if something else
// changes dir meanwhile.
//
// Nothing is done if dir has an entry or target is not a directory. Else
// directories, regular files, FIFOs and symlinks (never followed) are copied
// with their mode, owner and times, and dir takes target's (Docker's
// copyOwnership); sockets and devices are skipped, hard links become
// separate files.
func CopyUp(rootfs, target, dir string) error {
	fail := func(rel string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("copying %s into the volume: %w", path.Join(target, rel), err)
	}
	dst, err := inroot.Open(dir)
	if err != nil {
		return fail(".", err)
	}
	defer dst.Close()
	if empty, err := isEmpty(dst); !empty || err != nil {
		return fail(".", err)
	}
	src, err := inroot.Open(rootfs)
	if err != nil {
		return fail(".", err)
	}
	defer src.Close()
	top, err := src.OpenFd(target, unix.O_PATH|unix.O_DIRECTORY, 0, inroot.InRoot)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // no directory to copy
	} else if err != nil {
		return fail(".", err)
	}
	defer unix.Close(top)

	// Directories get their owner, mode and times once the walk is over:
	// filling them changes their times, and a read-only mode is in the
	// way.
	dirs := map[string]unix.Stat_t{}
	err = inroot.WalkAt(top, ".", func(sdir int, name, rel string, st *unix.Stat_t) error {
		if rel == "" {
			dirs[""] = *st
			return nil
		}
		err := copyEntry(dst, sdir, name, rel, st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			dirs[rel] = *st
		}
		return fail(rel, err)
	})
	if err != nil {
		return err
	}
	rels := make([]string, 0, len(dirs))
	for rel := range dirs {
		rels = append(rels, rel)
	}
	// Deepest first: a parent's read-only mode comes last.
	slices.SortFunc(rels, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, rel := range rels {
		st := dirs[rel]
		if err := setDirMeta(dst, rel, &st); err != nil {
			return fail(rel, err)
		}
	}
	return nil
}

func isEmpty(dst *inroot.Root) (bool, error) {
	f, err := dst.Open(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// copyEntry makes rel in dst a copy of name in sdir, described by st; a
// directory, empty. Its parent in dst is one CopyUp made: it is opened
// refusing any symlink.
func copyEntry(dst *inroot.Root, sdir int, name, rel string, st *unix.Stat_t) error {
	parent, base := path.Split(rel)
	pfd, err := dst.OpenFd(parent, unix.O_PATH|unix.O_DIRECTORY, 0, inroot.NoSymlinks)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return pathError("mkdir", rel, unix.Mkdirat(pfd, base, 0o700))
	case unix.S_IFREG:
		err = copyFile(sdir, name, pfd, base)
	case unix.S_IFLNK:
		var link string
		if link, err = inroot.Readlinkat(sdir, name); err == nil {
			err = pathError("symlink", rel, unix.Symlinkat(link, pfd, base))
		}
	case unix.S_IFIFO:
		err = pathError("mkfifo", rel, unix.Mknodat(pfd, base, unix.S_IFIFO|0o600, 0))
	default:
		return nil // sockets and device nodes
	}
	if err != nil {
		return err
	}
	return setMeta(pfd, base, st)
}

func copyFile(sdir int, name string, pfd int, base string) error {
	in, err := unix.Openat(sdir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return pathError("open", name, err)
	}
	inf := os.NewFile(uintptr(in), name)
	defer inf.Close()
	// O_EXCL|O_NOFOLLOW: the copy is made here, never followed.
	out, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return pathError("create", base, err)
	}
	outf := os.NewFile(uintptr(out), base)
	_, err = io.Copy(outf, inf)
	if cerr := outf.Close(); err == nil {
		err = cerr
	}
	return err
}

// setMeta gives base in pfd, which CopyUp made, st's owner, mode and
// times; a symlink is not followed.
func setMeta(pfd int, base string, st *unix.Stat_t) error {
	if err := unix.Fchownat(pfd, base, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return pathError("lchown", base, err)
	}
	// After the chown, which clears setuid and setgid; links have no mode.
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := inroot.Chmodat(pfd, base, base, st.Mode&0o7777); err != nil {
			return err
		}
	}
	return pathError("utimes", base, unix.UtimesNanoAt(pfd, base, times(st), unix.AT_SYMLINK_NOFOLLOW))
}

// setDirMeta gives the directory rel of dst ("" for dst itself) st's
// owner, mode and times, through a descriptor of it.
func setDirMeta(dst *inroot.Root, rel string, st *unix.Stat_t) error {
	name := rel
	if name == "" {
		name = "."
	}
	fd, err := dst.OpenFd(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0, inroot.NoSymlinks)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, int(st.Uid), int(st.Gid)); err != nil {
		return pathError("chown", name, err)
	}
	if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
		return pathError("chmod", name, err)
	}
	return pathError("utimes", name, unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), times(st), 0))
}

func times(st *unix.Stat_t) []unix.Timespec {
	return []unix.Timespec{st.Atim, st.Mtim}
}

func pathError(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: p, Err: err}
}
