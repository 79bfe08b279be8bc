package engine

import (
	"context"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// imageStore is the store for the engine's own uses of images (create,
// commit, the classic builder, df); the image endpoints are package
// images'.
func (e *Engine) imageStore() (imagestore.Store, error) {
	if e.images == nil {
		return nil, errdefs.ErrUnavailable.WithMessage("no image store")
	}
	return e.images, nil
}

// imageCount is /info's Images: every image of the store.
func (e *Engine) imageCount(ctx context.Context) int {
	if e.images == nil {
		return 0
	}
	imgs, err := e.images.ListImages(ctx)
	if err != nil {
		e.log.WarnContext(ctx, "counting images", "err", err)
		return 0
	}
	return len(imgs)
}

// sweepRootfs has the rootfs pool delete the writable layers that no
// container record owns (rootfs.Pool.Sweep).
func (e *Engine) sweepRootfs(ctx context.Context) {
	list, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		e.log.Warn("listing containers", "err", err)
		return
	}
	owned := map[string]bool{}
	for _, c := range list {
		owned[c.Runtime.RootfsID] = true
	}
	e.rootfs.Sweep(ctx, owned)
}
