package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/inroot"
)

// Root is a container's mounted rootfs (or a mount's source), open for
// lookups that cannot leave it (package inroot).
type Root struct {
	*inroot.Root
	path string // the mount point, for resolving users and messages
}

// Path is the directory the root was opened at.
func (r *Root) Path() string { return r.path }

// New makes a Root of r, opened at path.
func New(r *inroot.Root, path string) *Root { return &Root{Root: r, path: path} }

// Open opens the directory p as a root for cp's lookups.
func Open(p string) (*Root, error) {
	r, err := inroot.Open(p)
	if err != nil {
		return nil, err
	}
	return &Root{Root: r, path: p}, nil
}

// open opens name, a path in the container, with every symlink and ".."
// resolved as if the rootfs were "/"; magic links (/proc/self/root…) are
// refused.
func (r *Root) open(name string, flags int) (int, error) {
	return r.OpenFd(name, flags, 0, inroot.InRoot)
}

// Entry names one file: the directory holding it (an open fd) and its
// name there. An empty name is the directory itself.
type Entry struct {
	dir  int
	name string
	st   unix.Stat_t
}

// Close releases the entry's directory.
func (e *Entry) Close() { unix.Close(e.dir) }

// stat finds abs as Docker does: the last element is not followed unless
// abs ends in "/" or "/." (or is "/").
func (r *Root) Stat(abs string) (*Entry, containertypes.PathStat, error) {
	ent := &Entry{}
	if abs == "/" || strings.HasSuffix(abs, "/") || strings.HasSuffix(abs, "/.") {
		fd, err := r.open(abs, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return nil, containertypes.PathStat{}, err
		}
		ent.dir = fd
		if err := unix.Fstat(fd, &ent.st); err != nil {
			ent.Close()
			return nil, containertypes.PathStat{}, err
		}
	} else {
		dir, base := path.Split(abs)
		fd, err := r.open(dir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return nil, containertypes.PathStat{}, err
		}
		ent.dir, ent.name = fd, base
		if err := unix.Fstatat(fd, base, &ent.st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			ent.Close()
			return nil, containertypes.PathStat{}, &os.PathError{Op: "lstat", Path: abs, Err: err}
		}
	}
	st := containertypes.PathStat{
		Name:  StatName(abs),
		Size:  ent.st.Size,
		Mode:  fileMode(ent.st.Mode),
		Mtime: time.Unix(ent.st.Mtim.Unix()),
	}
	if ent.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := r.Follow(abs)
		if err != nil {
			ent.Close()
			return nil, containertypes.PathStat{}, err
		}
		st.LinkTarget = target
	}
	return ent, st, nil
}

// follow evaluates every symlink of p inside the root, as a process in
// the container would, as far as p exists: Docker's LinkTarget. It only
// computes a name; nothing is opened through it.
func (r *Root) Follow(p string) (string, error) { return r.Resolve(p, inroot.InRoot) }

// directory resolves abs, following every symlink inside the root, to the
// directory an extraction goes into, and returns its path in the
// container.
func (r *Root) Directory(abs string) (string, error) {
	dest, err := r.Follow(abs)
	if err != nil {
		return "", err
	}
	fd, err := r.open(dest, unix.O_PATH)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", errdefs.ErrInvalidArgument.WithMessage("extraction point is not a directory")
	}
	return dest, nil
}

// tarWriter archives a tree through directory fds.
type tarWriter struct {
	tw    *tar.Writer
	links map[[2]uint64]string // first name of each multiply linked file
	buf   []byte
}

func newTarWriter(w io.Writer) *tarWriter {
	return &tarWriter{tw: tar.NewWriter(w), links: map[[2]uint64]string{}, buf: make([]byte, 32<<10)}
}

func (r *Root) WriteTar(w io.Writer, ent *Entry, name string) error {
	t := newTarWriter(w)
	base := ent.name
	if base == "" {
		base = "."
	}
	if err := t.walk(ent.dir, base, name); err != nil {
		return err
	}
	return t.tw.Close()
}

// walk archives the tree at name in dir, its entries named prefix and
// their paths below it; an empty prefix leaves the tree's top out.
func (t *tarWriter) walk(dir int, name, prefix string) error {
	err := inroot.WalkAt(dir, name, func(dir int, name, rel string, st *unix.Stat_t) error {
		tarName := prefix
		switch {
		case rel == "" && prefix == "":
			return nil
		case rel == "":
		case prefix == "":
			tarName = rel
		default:
			tarName = strings.TrimSuffix(prefix, "/") + "/" + rel
		}
		return t.add(dir, name, st, tarName)
	})
	if errors.Is(err, inroot.ErrTooDeep) {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s: %v", prefix, inroot.ErrTooDeep))
	}
	return err
}

// add writes the header of one Entry (and a regular file's content);
// the walk goes into a directory's entries after it.
func (t *tarWriter) add(dir int, name string, st *unix.Stat_t, tarName string) error {
	hdr := &tar.Header{
		Name:    tarName,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()).Truncate(time.Second),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		hdr.Typeflag = tar.TypeDir
		if !strings.HasSuffix(hdr.Name, "/") {
			hdr.Name += "/"
		}
	case unix.S_IFREG:
		return t.addFile(dir, name, st, hdr)
	case unix.S_IFLNK:
		target, err := inroot.Readlinkat(dir, name)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	case unix.S_IFIFO:
		hdr.Typeflag = tar.TypeFifo
	case unix.S_IFCHR, unix.S_IFBLK:
		hdr.Typeflag = tar.TypeChar
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			hdr.Typeflag = tar.TypeBlock
		}
		hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
	default:
		return nil // sockets are not archived, as in Docker
	}
	return t.tw.WriteHeader(hdr)
}

func (t *tarWriter) addFile(dir int, name string, st *unix.Stat_t, hdr *tar.Header) error {
	key := [2]uint64{st.Dev, st.Ino}
	if st.Nlink > 1 {
		if first, ok := t.links[key]; ok {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return t.tw.WriteHeader(hdr)
		}
		t.links[key] = hdr.Name
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil // removed or replaced by a link meanwhile
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: hdr.Name, Err: err}
	}
	f := os.NewFile(uintptr(fd), hdr.Name)
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return err
	}
	if now.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // replaced meanwhile
	}
	hdr.Typeflag, hdr.Size = tar.TypeReg, now.Size
	if err := t.tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.CopyBuffer(t.tw, io.LimitReader(f, now.Size), t.buf)
	if err != nil {
		return err
	}
	// A file that shrank while it was read is padded: the archive stays
	// well formed.
	for n < now.Size {
		k := min(now.Size-n, int64(len(t.buf)))
		clear(t.buf[:k])
		w, err := t.tw.Write(t.buf[:k])
		if err != nil {
			return err
		}
		n += int64(w)
	}
	return nil
}
