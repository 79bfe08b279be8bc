package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/inroot"
)

type ExtractOptions struct {
	// NoOverwriteDirNonDir refuses to replace a directory with a
	// non-directory and the reverse.
	NoOverwriteDirNonDir bool
	// Owner, if set, owns every extracted file (uid, gid); else the ids
	// in the archive do.
	Owner *[2]int
}

// dirTimes is a directory whose times are set once everything in it has
// been written.
type dirTimes struct {
	path  string
	times [2]unix.Timespec
}

// extract unpacks the tar r into dest, a directory of the container. Each
// Entry's parent is resolved in the root (inroot's InRoot scope), so
// symlinks, including those the archive itself made, lead nowhere but
// into the container; the Entry itself is then made with *at calls on
// that directory that never follow a symlink.
func (r *Root) Extract(dest string, tr io.Reader, opts ExtractOptions) error {
	rd := tar.NewReader(tr)
	var dirs []dirTimes
	for {
		hdr, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("reading the archive: " + err.Error())
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "." {
			continue // the extraction directory itself exists
		}
		full := path.Join(dest, name)
		if err := checkLink(dest, full, hdr.Typeflag, hdr.Linkname); err != nil {
			return err
		}
		isDir, err := r.extractEntry(dest, full, hdr, rd, opts)
		if err != nil {
			return err
		}
		if isDir {
			dirs = append(dirs, dirTimes{full, entryTimes(hdr)})
		}
	}
	for _, d := range dirs {
		dir, base := path.Split(d.path)
		fd, err := r.open(dir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		err = unix.UtimesNanoAt(fd, base, d.times[:], unix.AT_SYMLINK_NOFOLLOW)
		unix.Close(fd)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "utimes", Path: d.path, Err: err}
		}
	}
	return nil
}

func entryTimes(hdr *tar.Header) [2]unix.Timespec {
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	return [2]unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
}

// extractEntry makes one Entry; it reports whether it was a directory.
func (r *Root) extractEntry(dest, full string, hdr *tar.Header, content io.Reader, opts ExtractOptions) (bool, error) {
	dir, base := path.Split(full)
	pfd, err := r.MakeDir(dir)
	if err != nil {
		return false, err
	}
	defer unix.Close(pfd)

	isDir := hdr.Typeflag == tar.TypeDir
	var old unix.Stat_t
	if err := unix.Fstatat(pfd, base, &old, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		oldDir := old.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case opts.NoOverwriteDirNonDir && oldDir && !isDir:
			return false, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("cannot overwrite directory %q with non-directory %q", full, hdr.Name))
		case opts.NoOverwriteDirNonDir && !oldDir && isDir:
			return false, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("cannot overwrite non-directory %q with directory %q", full, hdr.Name))
		case !(oldDir && isDir):
			if err := removeAllAt(pfd, base); err != nil {
				return false, err
			}
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return false, &os.PathError{Op: "lstat", Path: full, Err: err}
	}

	uid, gid := hdr.Uid, hdr.Gid
	if opts.Owner != nil {
		uid, gid = opts.Owner[0], opts.Owner[1]
	}
	mode := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return false, &os.PathError{Op: "mkdir", Path: full, Err: err}
		}
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, &os.PathError{Op: "open", Path: full, Err: err}
		}
		defer unix.Close(fd)
		return true, setOwnerMode(fd, full, uid, gid, mode)
	case tar.TypeReg, tar.TypeGNUSparse: // the reader reports TypeRegA as TypeReg
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return false, &os.PathError{Op: "create", Path: full, Err: err}
		}
		f := os.NewFile(uintptr(fd), full)
		defer f.Close()
		if _, err := io.Copy(f, content); err != nil {
			return false, fmt.Errorf("writing %s: %w", full, err)
		}
		if err := setOwnerMode(fd, full, uid, gid, mode); err != nil {
			return false, err
		}
	case tar.TypeSymlink:
		if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
			return false, &os.PathError{Op: "symlink", Path: full, Err: err}
		}
		if err := chownAt(pfd, base, full, uid, gid); err != nil {
			return false, err
		}
	case tar.TypeLink:
		target := path.Join(dest, hdr.Linkname)
		tdir, tbase := path.Split(target)
		tfd, err := r.open(tdir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return false, err
		}
		// No AT_SYMLINK_FOLLOW: a link to a symlink is that symlink.
		err = unix.Linkat(tfd, tbase, pfd, base, 0)
		unix.Close(tfd)
		if err != nil {
			return false, &os.PathError{Op: "link", Path: full, Err: err}
		}
		return false, nil // the target's metadata is the link's
	case tar.TypeFifo, tar.TypeChar, tar.TypeBlock:
		kind := map[byte]uint32{tar.TypeFifo: unix.S_IFIFO, tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK}[hdr.Typeflag]
		dev := int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)))
		if err := unix.Mknodat(pfd, base, kind|0o600, dev); err != nil {
			if kind != unix.S_IFIFO && errors.Is(err, unix.EPERM) {
				// No device nodes in a user namespace; Docker skips
				// them too.
				return false, nil
			}
			return false, &os.PathError{Op: "mknod", Path: full, Err: err}
		}
		if err := chownAt(pfd, base, full, uid, gid); err != nil {
			return false, err
		}
		if err := inroot.Chmodat(pfd, base, full, mode); err != nil {
			return false, err
		}
	case tar.TypeXGlobalHeader:
		return false, nil
	default:
		return false, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s: unhandled tar Entry type %q", hdr.Name, hdr.Typeflag))
	}
	t := entryTimes(hdr)
	if err := unix.UtimesNanoAt(pfd, base, t[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, &os.PathError{Op: "utimes", Path: full, Err: err}
	}
	return false, nil
}

// mkdirAll opens dir, a directory of the container, making what is
// missing on the way (0755), and returns an O_PATH fd of it. Like
// Docker's MkdirAll in the container's root, it follows symlinks, inside
// the rootfs: a link to a missing directory gets that directory made.
func (r *Root) MakeDir(dir string) (int, error) { return r.MkdirAll(dir, 0o755, true) }

// setOwnerMode sets owner and mode through an open fd, owner first (chown
// clears set-id bits).
func setOwnerMode(fd int, name string, uid, gid int, mode uint32) error {
	if err := unix.Fchown(fd, uid, gid); err != nil && !ignoreChown(err) {
		return &os.PathError{Op: "chown", Path: name, Err: err}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

func chownAt(dir int, base, name string, uid, gid int) error {
	if err := unix.Fchownat(dir, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil && !ignoreChown(err) {
		return &os.PathError{Op: "lchown", Path: name, Err: err}
	}
	return nil
}

// ignoreChown: an id the user namespace does not map (single-UID mode, or
// ids beyond the subordinate range) cannot be set; as Docker in a user
// namespace, the file keeps the engine's.
func ignoreChown(err error) bool { return errors.Is(err, unix.EINVAL) }

// removeAllAt removes name in dir and, for a directory, everything in it,
// without following symlinks.
func removeAllAt(dir int, name string) error {
	err := inroot.RemoveAllAt(dir, name)
	if errors.Is(err, inroot.ErrTooDeep) {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s: %v", name, inroot.ErrTooDeep))
	}
	return err
}
