package volume

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

// CopyUp fills the volume directory dir with what the container's rootfs
// has at target (an absolute path inside the container), as Docker does when
// an empty volume is mounted over image content: images ship defaults where
// they declare a VOLUME and expect them to show through the first time.
// target is resolved as if rootfs were "/", so no symlink of the image leads
// out of it (the container does not run yet: the path cannot change).
//
// Nothing is done if dir has an entry or target is not a directory. Else
// directories, regular files, FIFOs and symlinks (never followed) are copied
// with their mode, owner and times, and dir takes target's (Docker's
// copyOwnership); sockets and devices are skipped, hard links become
// separate files. On error, dir is left as it is.
func CopyUp(rootfs, target, dir string) error {
	fail := func(rel string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("copying %s into the volume: %w", path.Join(target, filepath.ToSlash(rel)), err)
	}
	f, err := os.Open(dir)
	if err == nil {
		_, err = f.Readdirnames(1)
		f.Close()
	}
	if err != io.EOF {
		return fail(".", err) // nil: dir has an entry
	}
	src, err := securejoin.SecureJoin(filepath.Clean(rootfs), target)
	if err != nil {
		return fail(".", err)
	}
	top, err := os.Lstat(src)
	if securejoin.IsNotExist(err) || err == nil && !top.IsDir() {
		return nil // ENOENT or ENOTDIR: no directory to copy
	} else if err != nil {
		return fail(".", err)
	}

	// Every entry is made at dir/rel. WalkDir yields a directory before
	// what it holds and never descends a symlink, so every parent on the
	// way to dir/rel is a directory we made with Mkdir: no symlink we
	// copied is ever traversed, and nothing is written outside dir.
	// Directories get their owner, mode and times once the walk is over:
	// filling them changes their times, and a read-only mode is in the way.
	dirs := map[string]*syscall.Stat_t{".": top.Sys().(*syscall.Stat_t)}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p) // p is src or under it
		if err != nil || rel == "." {
			return fail(rel, err)
		}
		fi, err := d.Info() // an lstat
		if err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			if err = copyEntry(p, filepath.Join(dir, rel), st); err == nil && fi.IsDir() {
				dirs[rel] = st
			}
		}
		return fail(rel, err)
	})
	if err != nil {
		return err
	}
	for rel, st := range dirs {
		p := filepath.Join(dir, rel)
		if rel == "." {
			// dir may be a /proc/self/fd link to the directory (a volume's
			// subpath, opened inside it): the slash has setMeta follow it.
			p = dir + "/"
		}
		if err := setMeta(p, st); err != nil {
			return fail(rel, err)
		}
	}
	return nil
}

// copyEntry makes dst a copy of src, described by st; a directory, empty.
func copyEntry(src, dst string, st *syscall.Stat_t) error {
	var err error
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return os.Mkdir(dst, 0o700)
	case syscall.S_IFREG:
		err = copyFile(src, dst)
	case syscall.S_IFLNK:
		var link string
		if link, err = os.Readlink(src); err == nil {
			err = os.Symlink(link, dst)
		}
	case syscall.S_IFIFO:
		err = pathError("mkfifo", dst, unix.Mkfifo(dst, 0o600))
	default:
		return nil // sockets and device nodes
	}
	if err != nil {
		return err
	}
	return setMeta(dst, st)
}

func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	// O_EXCL: dst is made here, never followed if it were a symlink.
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// setMeta gives p, which CopyUp made, st's owner, mode and times; a
// symlink is not followed.
func setMeta(p string, st *syscall.Stat_t) error {
	if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	// After the chown, which clears setuid and setgid; links have no mode.
	if st.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		if err := pathError("chmod", p, unix.Chmod(p, st.Mode&0o7777)); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
	return pathError("utimes", p, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
}

func pathError(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: p, Err: err}
}
