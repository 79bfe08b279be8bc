package engine

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"

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
		pw.CloseWithError(root.WriteTree(pw))
	}()
	e.containerEvent(c, eventtypes.ActionExport, nil)
	return &archiveReader{PipeReader: pr, finished: finished, done: done}, nil
}
