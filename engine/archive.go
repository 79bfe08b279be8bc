package engine

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/spec"
)

// docker cp: the container's rootfs is mounted through the image store
// (mounts nest, so this works for running and stopped containers alike)
// and every path a client names is resolved inside it (package inroot):
// symlinks and ".." resolve as if the rootfs were "/", so no link in the container can make the engine read or write
// a host file. Trees are walked and written through directory file
// descriptors, one component at a time and never following a symlink, so a
// container that swaps a directory for a link while cp runs gains nothing
// (the race of CVE-2018-15664).
//
// A path in a bind mount or a volume is resolved in the mount's source
// instead, the same way (archivemounts.go). Limits: tmpfs mounts and the
// /etc/hosts, /etc/hostname and /etc/resolv.conf the engine provides are
// not part of the rootfs: cp sees the rootfs underneath them; a directory
// copied out holds what the rootfs has under the mount points inside it,
// not their content. Extended attributes are neither archived nor
// restored.

// ExtractRequest is PUT /containers/{id}/archive.
type ExtractRequest struct {
	// Path is the directory to extract into (symlinks followed, inside
	// the container).
	Path string
	// NoOverwriteDirNonDir refuses to replace a directory with a
	// non-directory and the reverse.
	NoOverwriteDirNonDir bool
	// CopyUIDGID makes every extracted file belong to the container's
	// user (Config.User) instead of the ids in the archive.
	CopyUIDGID bool
	// RootfsOnly writes into the rootfs even under a bind or volume
	// mount point (the builder's COPY).
	RootfsOnly bool
}

// ContainerStatPath answers HEAD /containers/{id}/archive: the file at
// path, not following a final symlink (its LinkTarget says where it
// leads). A missing file is errdefs.ErrNotFound with Docker's message.
func (e *Engine) ContainerStatPath(ctx context.Context, ref, p string) (containertypes.PathStat, error) {
	t, err := e.openCpTarget(ctx, ref, p, false)
	if err != nil {
		return containertypes.PathStat{}, err
	}
	defer t.close()
	ent, st, err := t.root.stat(t.abs)
	if err != nil {
		return containertypes.PathStat{}, fileError(err, p, ref)
	}
	ent.close()
	st.Name = t.name
	return st, nil
}

// ContainerArchivePath answers GET /containers/{id}/archive: a tar of the
// file or directory at path, its entries named after the path's last
// element, and its stat. The rootfs stays mounted until the reader is
// closed.
func (e *Engine) ContainerArchivePath(ctx context.Context, ref, p string) (io.ReadCloser, containertypes.PathStat, error) {
	return e.archivePath(ctx, ref, p, false)
}

// archivePath is ContainerArchivePath, in the rootfs only with rootfsOnly.
func (e *Engine) archivePath(ctx context.Context, ref, p string, rootfsOnly bool) (io.ReadCloser, containertypes.PathStat, error) {
	t, err := e.openCpTarget(ctx, ref, p, rootfsOnly)
	if err != nil {
		return nil, containertypes.PathStat{}, err
	}
	ent, st, err := t.root.stat(t.abs)
	if err != nil {
		t.close()
		return nil, containertypes.PathStat{}, fileError(err, p, ref)
	}
	st.Name = t.name
	if !rootfsOnly {
		e.containerEvent(t.c, eventtypes.ActionArchivePath, nil)
	}
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer ent.close()
		pw.CloseWithError(t.root.writeTar(pw, ent, st.Name))
	}()
	return &archiveReader{PipeReader: pr, finished: finished, done: t.close}, st, nil
}

// archiveReader unmounts the rootfs once the tar writer has stopped.
type archiveReader struct {
	*io.PipeReader
	finished chan struct{}
	done     func()
}

func (a *archiveReader) Close() error {
	err := a.PipeReader.Close()
	<-a.finished
	a.done()
	return err
}

// ContainerExtractToDir answers PUT /containers/{id}/archive: it extracts
// the tar (plain, gzip or bzip2) in content into the directory at
// req.Path. An entry that would land outside that directory, by its name,
// a hard link or a relative symlink, fails the request
// (errdefs.ErrInvalidArgument), as in Docker; whatever the archive holds,
// nothing is written outside the rootfs.
func (e *Engine) ContainerExtractToDir(ctx context.Context, ref string, req ExtractRequest, content io.Reader) error {
	t, err := e.openCpTarget(ctx, ref, req.Path, req.RootfsOnly)
	if err != nil {
		return err
	}
	defer t.close()
	dest, err := t.root.directory(t.abs)
	if err != nil {
		return fileError(err, req.Path, ref)
	}
	if msg := t.readOnly(); msg != "" {
		return errdefs.ErrInvalidArgument.WithMessage(msg)
	}
	opts := extractOptions{noOverwriteDirNonDir: req.NoOverwriteDirNonDir}
	if c := t.c; req.CopyUIDGID && c.Config != nil && c.Config.User != "" {
		u, err := spec.ResolveUser(t.rootfs.path, c.Config.User, nil, e.opts.IDMap == "single")
		if err != nil {
			return err
		}
		opts.owner = &[2]int{int(u.UID), int(u.GID)}
	}
	r, err := decompress(content)
	if err != nil {
		return err
	}
	if err := t.root.extract(dest, r, opts); err != nil {
		return err
	}
	if !req.RootfsOnly {
		e.containerEvent(t.c, eventtypes.ActionExtractToDir, nil)
	}
	return nil
}

// openContainerFS mounts the container's rootfs and opens it for lookups;
// done releases both.
func (e *Engine) openContainerFS(ctx context.Context, ref string) (*container.Container, *fsRoot, func(), error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.Runtime.RootfsID == "" {
		return nil, nil, nil, errdefs.ErrFailedPrecondition.WithMessage(fmt.Sprintf("container %s has no root filesystem", c.ID))
	}
	mnt, err := e.images.MountRootfs(ctx, c.Runtime.RootfsID)
	if err != nil {
		return nil, nil, nil, err
	}
	unmount := func() {
		if err := e.images.UnmountRootfs(context.WithoutCancel(ctx), c.Runtime.RootfsID); err != nil {
			e.log.Warn("unmounting rootfs after cp", "container", c.ID, "err", err)
		}
	}
	root, err := openFSRoot(mnt)
	if err != nil {
		unmount()
		return nil, nil, nil, err
	}
	return c, root, func() { root.Close(); unmount() }, nil
}

// containerPath makes p absolute and clean, keeping what asks for the
// directory a final symlink leads to, as Docker does: a last element "."
// (".", "/.", "./", "dir/./") gives "/." or "dir/." (the directory's
// content, archived as "./…"), a trailing "/" gives "dir/".
func containerPath(p string) string {
	clean := path.Join("/", p)
	switch {
	case p != "" && path.Base(p) == ".":
		clean = strings.TrimSuffix(clean, "/") + "/."
	case clean != "/" && strings.HasSuffix(p, "/"):
		clean += "/"
	}
	return clean
}

// statName is the name Docker gives the entry at abs (filepath.Base).
func statName(abs string) string {
	if abs == "/" {
		return "/"
	}
	return path.Base(abs)
}

// fileError words a lookup failure as Docker does. A file named as a
// directory ("/etc/passwd/", "/etc/passwd/x") is not a missing file: as
// in Docker, it is its lstat's "not a directory", unclassed (500).
func fileError(err error, p, ref string) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("Could not find the file %s in container %s", p, ref))
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return &fs.PathError{Op: "lstat", Path: containerPath(p), Err: syscall.ENOTDIR}
	case errors.As(err, &errno) && errno == syscall.ELOOP:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s in container %s: too many levels of symbolic links", p, ref))
	}
	return err
}

// entryName cleans a tar entry's name into a path relative to the
// extraction directory. A name that climbs out of it is refused, as
// Docker's breakout check does; "." is the directory itself.
func entryName(name string) (string, error) {
	clean := path.Clean("/" + name)
	if rel := path.Clean(name); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%q is outside of the extraction directory", name))
	}
	if clean == "/" {
		return ".", nil
	}
	return clean[1:], nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// checkLink refuses the links Docker refuses: a hard link whose target
// climbs out of the extraction directory, and a relative symlink that
// points above it. Absolute symlinks are fine: they resolve inside the
// container.
func checkLink(dest, full string, typ byte, linkname string) error {
	switch typ {
	case tarTypeLink:
		if _, err := entryName(linkname); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("hard link %q is outside of %q", linkname, dest))
		}
	case tarTypeSymlink:
		if !path.IsAbs(linkname) && !within(dest, path.Join(path.Dir(full), linkname)) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("symlink %q -> %q is outside of %q", full, linkname, dest))
		}
	}
	return nil
}

// tar type flags, named here so that the pure checks need no archive/tar.
const (
	tarTypeLink    = '1'
	tarTypeSymlink = '2'
)

// decompress undoes the compressions Docker accepts in PUT archive that Go
// reads without helper binaries; xz and zstd are refused.
func decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(6)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return gzip.NewReader(br)
	case bytes.HasPrefix(head, []byte("BZh")):
		return bzip2.NewReader(br), nil
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}), bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, errdefs.ErrNotImplemented.WithMessage("xz and zstd archives are not supported: send a plain tar")
	}
	return br, nil
}

// fileMode is Go's FileMode for a stat(2) mode, as os.Lstat makes it
// (PathStat carries Go's encoding).
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= os.ModeDevice
	case syscall.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= os.ModeDir
	case syscall.S_IFIFO:
		mode |= os.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= os.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= os.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}
