package rootfs

import (
	"context"
	"log/slog"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// Layers is what the pool needs of the image store's writable layers
// (imagestore.Rootfs has them).
type Layers interface {
	CreateRootfs(ctx context.Context, containerID, imageID string, volatile bool) (string, error)
	ResetRootfs(ctx context.Context, rootfsID string) error
	RemoveRootfs(ctx context.Context, rootfsID string) error
	Rootfses(ctx context.Context) ([]string, error)
}

var _ Layers = imagestore.Rootfs(nil)

// Pool is the engine's keeper of writable layers. Create it with New.
type Pool struct {
	store  Layers
	log    *slog.Logger
	spares spares
	rm     remover
}

// New returns a pool over store's writable layers.
func New(store Layers, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{store: store, log: log}
	p.rm.idle.L = &p.rm.mu
	return p
}

// Recycle takes back the layer id of a removed container made from
// imageID (volatile: a --rm container's): emptied and kept for the next
// container of the image if the pool wants one, else deleted; in the
// background.
func (p *Pool) Recycle(id, imageID string, volatile bool) {
	p.recycleLater(id, poolKey{imageID, volatile})
}

// Close deletes every spare, keeps no more and waits for the queued
// deletions: the daemon's shutdown.
func (p *Pool) Close() {
	p.drain(true)
	p.Wait()
}
