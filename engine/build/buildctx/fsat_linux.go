package buildctx

import (
	"archive/tar"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hutch-engine/hutch/internal/inroot"
	"golang.org/x/sys/unix"
)

// open opens dir, a directory of the context, as an O_PATH fd, with
// every symlink and ".." resolved as if the context were "/".
func (x *extractor) open(dir string) (int, error) {
	return x.root.OpenFd(dir, unix.O_PATH|unix.O_DIRECTORY, 0, inroot.InRoot)
}

// mkdirAll opens dir as open does, making what is missing (0755).
func (x *extractor) mkdirAll(dir string) (int, error) {
	fd, err := x.root.MkdirAll(dir, 0o755, false)
	if err != nil {
		return -1, fsError("mkdir", strings.TrimSuffix(dir, "/"), err)
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
