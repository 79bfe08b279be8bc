package engine

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep cp descends: every level holds a directory file
// descriptor open, and a container must not exhaust the engine's.
const maxDepth = 512

// fsRoot is a container's mounted rootfs, open for lookups that cannot
// leave it.
type fsRoot struct {
	fd   int
	path string // the mount point, for resolving users and messages
}

func openFSRoot(p string) (*fsRoot, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return &fsRoot{fd: fd, path: p}, nil
}

func (r *fsRoot) Close() error { return unix.Close(r.fd) }

// open opens name, a path in the container, with every symlink and ".."
// resolved as if the rootfs were "/"; magic links (/proc/self/root…) are
// refused.
func (r *fsRoot) open(name string, flags int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 16 {
		fd, err := unix.Openat2(r.fd, name, &how)
		// EAGAIN: a rename raced with the lookup; RESOLVE_IN_ROOT is
		// strict about that.
		if err != unix.EAGAIN && err != unix.EINTR {
			if err != nil {
				return -1, &os.PathError{Op: "open", Path: name, Err: err}
			}
			return fd, nil
		}
	}
	return -1, &os.PathError{Op: "open", Path: name, Err: unix.EAGAIN}
}

// entry names one file: the directory holding it (an open fd) and its
// name there. An empty name is the directory itself.
type entry struct {
	dir  int
	name string
	st   unix.Stat_t
}

func (e *entry) close() { unix.Close(e.dir) }

// stat finds abs as Docker does: the last element is not followed unless
// abs ends in "/" or "/." (or is "/").
func (r *fsRoot) stat(abs string) (*entry, containertypes.PathStat, error) {
	ent := &entry{}
	if abs == "/" || strings.HasSuffix(abs, "/") || strings.HasSuffix(abs, "/.") {
		fd, err := r.open(abs, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return nil, containertypes.PathStat{}, err
		}
		ent.dir = fd
		if err := unix.Fstat(fd, &ent.st); err != nil {
			ent.close()
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
			ent.close()
			return nil, containertypes.PathStat{}, &os.PathError{Op: "lstat", Path: abs, Err: err}
		}
	}
	st := containertypes.PathStat{
		Name:  statName(abs),
		Size:  ent.st.Size,
		Mode:  fileMode(ent.st.Mode),
		Mtime: time.Unix(ent.st.Mtim.Unix()),
	}
	if ent.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := r.follow(abs)
		if err != nil {
			ent.close()
			return nil, containertypes.PathStat{}, err
		}
		st.LinkTarget = target
	}
	return ent, st, nil
}

// follow evaluates every symlink of p inside the root, as a process in
// the container would, as far as p exists: Docker's LinkTarget. It only
// computes a name; nothing is opened through it.
func (r *fsRoot) follow(p string) (string, error) {
	var done []string
	todo := strings.Split(p, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		target, isLink, err := r.readLink("/"+strings.Join(done, "/"), c)
		if err != nil {
			return "", err
		}
		if !isLink {
			done = append(done, c)
			continue
		}
		if links++; links > 255 {
			return "", &os.PathError{Op: "readlink", Path: p, Err: unix.ELOOP}
		}
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return "/" + strings.Join(done, "/"), nil
}

// readLink reads name in dir if it is a symlink; anything missing is not
// a link.
func (r *fsRoot) readLink(dir, name string) (string, bool, error) {
	fd, err := r.open(dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", false, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return "", false, nil
	}
	target, err := readlinkat(fd, name)
	return target, err == nil, err
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: name, Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// directory resolves abs, following every symlink inside the root, to the
// directory an extraction goes into, and returns its path in the
// container.
func (r *fsRoot) directory(abs string) (string, error) {
	dest, err := r.follow(abs)
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

func (r *fsRoot) writeTar(w io.Writer, ent *entry, name string) error {
	t := &tarWriter{tw: tar.NewWriter(w), links: map[[2]uint64]string{}, buf: make([]byte, 32<<10)}
	if err := t.add(ent.dir, ent.name, &ent.st, name, 0); err != nil {
		return err
	}
	return t.tw.Close()
}

func (t *tarWriter) add(dir int, name string, st *unix.Stat_t, tarName string, depth int) error {
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
		return t.addDir(dir, name, hdr, depth)
	case unix.S_IFREG:
		return t.addFile(dir, name, st, hdr)
	case unix.S_IFLNK:
		target, err := readlinkat(dir, name)
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

func (t *tarWriter) addDir(dir int, name string, hdr *tar.Header, depth int) error {
	if depth > maxDepth {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s: directories nested deeper than %d levels", hdr.Name, maxDepth))
	}
	if name == "" {
		name = "."
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: hdr.Name, Err: err}
	}
	f := os.NewFile(uintptr(fd), hdr.Name)
	defer f.Close()
	hdr.Typeflag = tar.TypeDir
	if !strings.HasSuffix(hdr.Name, "/") {
		hdr.Name += "/"
	}
	if err := t.tw.WriteHeader(hdr); err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return err
		}
		if err := t.add(fd, n, &st, hdr.Name+n, depth+1); err != nil {
			return err
		}
	}
	return nil
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
