package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
)

// rootfsRemover deletes, or empties for the pool (rootfsPool), the
// writable layers of removed containers in the background, one at a time.
// Deleting one through containers/storage takes 6-10 ms of locks, JSON
// rewrites and syncs, on the path of every docker run --rm; the
// container's record is gone before, so the API answers at once. A daemon
// that dies first leaves the layer behind, and the next start deletes
// every layer no record owns (sweepRootfs).
type rootfsRemover struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when pending drops to 0
	queue   []rootfsJob
	pending int  // queued or being done
	running bool // drainRootfs works the queue
}

type rootfsJob struct {
	id string
	// reuse, when set, asks for the layer to be emptied and kept as a
	// spare for key if the pool wants one.
	reuse *poolKey
}

// removeRootfsLater queues the deletion of rootfs id.
func (e *Engine) removeRootfsLater(id string) { e.queueRootfs(rootfsJob{id: id}) }

// recycleRootfsLater queues rootfs id, made from k's image, to be emptied
// for the pool, or deleted if the pool has enough.
func (e *Engine) recycleRootfsLater(id string, k poolKey) {
	e.queueRootfs(rootfsJob{id: id, reuse: &k})
}

func (e *Engine) queueRootfs(j rootfsJob) {
	r := &e.rootfs
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, j)
	r.pending++
	if !r.running {
		r.running = true
		go e.drainRootfs()
	}
}

func (e *Engine) drainRootfs() {
	r := &e.rootfs
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			// Jobs taken by takeQueuedRootfs may still count in pending.
			r.running = false
			r.mu.Unlock()
			return
		}
		j := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		if j.reuse == nil || !e.recycleRootfs(j.id, *j.reuse) {
			e.removeRootfs(j.id)
		}
		e.rootfsJobDone()
	}
}

// rootfsJobDone counts a job taken from the queue as done.
func (e *Engine) rootfsJobDone() {
	r := &e.rootfs
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if r.pending == 0 {
		r.idle.Broadcast()
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
// record and its layer, or between creating a layer and its record, and
// the spares of the pool.
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
			e.log.Debug("removing a rootfs no container owns", "rootfs", id)
			e.removeRootfsLater(id)
		}
	}
}
