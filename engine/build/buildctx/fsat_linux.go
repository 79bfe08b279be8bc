package buildctx

import (
	"archive/tar"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// open opens dir, a directory of the context, as an O_PATH fd, with
// every symlink and ".." resolved as if the context were "/".
func (x *extractor) open(dir string) (int, error) {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 16 {
		fd, err := unix.Openat2(x.root, dir, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// mkdirAll opens dir as open does, making what is missing (0755).
func (x *extractor) mkdirAll(dir string) (int, error) {
	fd, err := x.open(dir)
	if err == nil {
		return fd, nil
	}
	dir = strings.TrimSuffix(dir, "/")
	if !errors.Is(err, unix.ENOENT) || dir == "" {
		return -1, fsError("open", dir, err)
	}
	parent, base := path.Split(dir)
	pfd, err := x.mkdirAll(parent)
	if err != nil {
		return -1, err
	}
	err = unix.Mkdirat(pfd, base, 0o755)
	unix.Close(pfd)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fsError("mkdir", dir, err)
	}
	// base may be a symlink: resolve it in the root like the rest.
	if fd, err = x.open(dir); err != nil {
		return -1, fsError("open", dir, err)
	}
	return fd, nil
}

// setMode gives fd, a file or directory just made, its mode: set-id and
// sticky bits are dropped when the process may not set them, and an
// unprivileged engine keeps the owner's read (and search) permission,
// remembering the real mode.
func (x *extractor) setMode(fd int, name string, mode uint32, isDir bool) error {
	disk := mode
	if x.unprivileged {
		disk |= 0o400
		if isDir {
			disk |= 0o700
		}
	}
	err := unix.Fchmod(fd, disk)
	if errors.Is(err, unix.EPERM) {
		mode, disk = mode&0o777, disk&0o777
		err = unix.Fchmod(fd, disk)
	}
	if err != nil {
		return fsError("chmod", name, err)
	}
	if !x.unprivileged {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fsError("stat", name, err)
	}
	if disk != mode {
		x.modes[st.Ino] = mode
	} else {
		delete(x.modes, st.Ino) // a number reused after a removal
	}
	return nil
}

// maxTime bounds the times set (the year 2242): what lies beyond is
// garbage no file system stores.
const maxTime = 1 << 33

func entryTimes(hdr *tar.Header) [2]unix.Timespec {
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	return [2]unix.Timespec{timespec(atime), timespec(hdr.ModTime)}
}

func timespec(t time.Time) unix.Timespec {
	s := t.Unix()
	switch {
	case s < 0:
		return unix.Timespec{}
	case s >= maxTime:
		return unix.NsecToTimespec(maxTime * int64(time.Second))
	}
	return unix.NsecToTimespec(s*int64(time.Second) + int64(t.Nanosecond()))
}

// fsError reports a failure to write an entry: the archive's fault (an
// *Error) unless the host is at fault (no space, I/O error, limits).
func fsError(op, name string, err error) error {
	var ue *Error
	if errors.As(err, &ue) {
		return err
	}
	for _, host := range []error{unix.ENOSPC, unix.EDQUOT, unix.EIO, unix.ENOMEM, unix.EMFILE, unix.ENFILE, unix.EROFS} {
		if errors.Is(err, host) {
			return fmt.Errorf("build context: %s %s: %w", op, name, err)
		}
	}
	return userErrorf("build context: %s %s: %v", op, name, err)
}

// removeAllAt removes name in dir and, for a directory, everything in
// it, without following symlinks.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, err := f.Readdirnames(-1)
	for _, n := range names {
		if err != nil {
			break
		}
		err = removeAllAt(fd, n)
	}
	f.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}
