package engine

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
)

// ContainerExport answers GET /containers/{id}/export (docker export): a
// tar of the container's whole filesystem as its rootfs holds it (mounts
// and the engine's /etc files are not in it, as in Docker), entries named
// relative to "/" without the root itself. The rootfs is mounted (mounts
// nest, so a running container can be exported) and walked as docker cp
// walks it, through directory file descriptors without following a link,
// until the reader is closed.
func (e *Engine) ContainerExport(ctx context.Context, ref string) (io.ReadCloser, error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	switch {
	case c.State.Status == container.StatusDead:
		return nil, errdefs.ErrConflict.WithMessage(fmt.Sprintf("You cannot export container %s which is Dead", c.ID))
	case c.State.Removing:
		return nil, errdefs.ErrConflict.WithMessage(fmt.Sprintf("You cannot export container %s which is being removed", c.ID))
	}
	_, root, done, err := e.openContainerFS(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		pw.CloseWithError(root.writeTree(pw))
	}()
	e.containerEvent(c, eventtypes.ActionExport, nil)
	return &archiveReader{PipeReader: pr, finished: finished, done: done}, nil
}

// writeTree archives everything under the root, each entry named by its
// path below the root.
func (r *fsRoot) writeTree(w io.Writer) error {
	fd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: r.path, Err: err}
	}
	dir := os.NewFile(uintptr(fd), r.path)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	slices.Sort(names)
	t := &tarWriter{tw: tar.NewWriter(w), links: map[[2]uint64]string{}, buf: make([]byte, 32<<10)}
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return err
		}
		if err := t.add(fd, n, &st, n, 1); err != nil {
			return err
		}
	}
	return t.tw.Close()
}
