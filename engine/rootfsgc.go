package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
)

// rootfsRemover deletes the writable layers of removed containers in the
// background, one at a time. Deleting one through containers/storage
// takes 6-10 ms of locks, JSON rewrites and syncs, on the path of every
// docker run --rm; the container's record is gone before, so the API
// answers at once. A daemon that dies first leaves the layer behind, and
// the next start deletes every layer no record owns (sweepRootfs).
type rootfsRemover struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when pending drops to 0
	queue   []string
	pending int // queued or being deleted
}

// removeRootfsLater queues the deletion of rootfs id.
func (e *Engine) removeRootfsLater(id string) {
	r := &e.rootfs
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, id)
	r.pending++
	if r.pending == 1 {
		go e.drainRootfs()
	}
}

func (e *Engine) drainRootfs() {
	r := &e.rootfs
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		id := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		e.removeRootfs(id)
		r.mu.Lock()
		r.pending--
		if r.pending == 0 {
			r.idle.Broadcast()
		}
		r.mu.Unlock()
	}
}

// waitRootfsRemovals returns once the queued deletions are done: image
// deletions wait (quiesceRootfs), so that a removed container's layer
// does not keep its image in use.
func (e *Engine) waitRootfsRemovals() {
	r := &e.rootfs
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.pending > 0 {
		r.idle.Wait()
	}
}

func (e *Engine) removeRootfs(id string) {
	if err := e.images.RemoveRootfs(context.Background(), id); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		e.log.Warn("removing rootfs", "rootfs", id, "err", err)
	}
}

// sweepRootfs queues the deletion of the writable layers that no
// container record owns: left by a daemon that died between deleting a
// record and its layer, or between creating a layer and its record.
func (e *Engine) sweepRootfs(ctx context.Context) {
	ids, err := e.images.Rootfses(ctx)
	if err != nil {
		e.log.Warn("listing rootfs layers", "err", err)
		return
	}
	list, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		e.log.Warn("listing containers", "err", err)
		return
	}
	owned := map[string]bool{}
	for _, c := range list {
		owned[c.Runtime.RootfsID] = true
	}
	for _, id := range ids {
		if !owned[id] {
			e.log.Info("removing a rootfs no container owns", "rootfs", id)
			e.removeRootfsLater(id)
		}
	}
}
