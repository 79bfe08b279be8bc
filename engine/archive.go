package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/archive"
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
	ent, st, err := t.root.Stat(t.abs)
	if err != nil {
		return containertypes.PathStat{}, archive.FileError(err, p, ref)
	}
	ent.Close()
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
	ent, st, err := t.root.Stat(t.abs)
	if err != nil {
		t.close()
		return nil, containertypes.PathStat{}, archive.FileError(err, p, ref)
	}
	st.Name = t.name
	if !rootfsOnly {
		e.containerEvent(t.c, eventtypes.ActionArchivePath, nil)
	}
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer ent.Close()
		pw.CloseWithError(t.root.WriteTar(pw, ent, st.Name))
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
	dest, err := t.root.Directory(t.abs)
	if err != nil {
		return archive.FileError(err, req.Path, ref)
	}
	if msg := t.readOnly(); msg != "" {
		return errdefs.ErrInvalidArgument.WithMessage(msg)
	}
	opts := archive.ExtractOptions{NoOverwriteDirNonDir: req.NoOverwriteDirNonDir}
	if c := t.c; req.CopyUIDGID && c.Config != nil && c.Config.User != "" {
		u, err := spec.ResolveUser(t.rootfs.Path(), c.Config.User, nil, e.opts.IDMap == "single")
		if err != nil {
			return err
		}
		opts.Owner = &[2]int{int(u.UID), int(u.GID)}
	}
	r, err := archive.Decompress(content)
	if err != nil {
		return err
	}
	if err := t.root.Extract(dest, r, opts); err != nil {
		return err
	}
	if !req.RootfsOnly {
		e.containerEvent(t.c, eventtypes.ActionExtractToDir, nil)
	}
	return nil
}

// openContainerFS mounts the container's rootfs and opens it for lookups;
// done releases both.
func (e *Engine) openContainerFS(ctx context.Context, ref string) (*container.Container, *archive.Root, func(), error) {
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
	root, err := archive.Open(mnt)
	if err != nil {
		unmount()
		return nil, nil, nil, err
	}
	return c, root, func() { root.Close(); unmount() }, nil
}
