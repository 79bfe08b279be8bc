package rootfs

import (
	"context"
	"errors"
	"sync"

	"github.com/containerd/errdefs"
)

// remover deletes, or empties for the pool (spares), the
// writable layers of removed containers in the background, one at a time.
// Deleting one through containers/storage takes 6-10 ms of locks, JSON
// rewrites and syncs, on the path of every docker run --rm; the
// container's record is gone before, so the API answers at once. A daemon
// that dies first leaves the layer behind, and the next start deletes
// every layer no record owns (Sweep).
type remover struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when pending drops to 0
	queue   []rootfsJob
	pending int  // queued or being done
	running bool // work works the queue
}

type rootfsJob struct {
	id string
	// reuse, when set, asks for the layer to be emptied and kept as a
	// spare for key if the pool wants one.
	reuse *poolKey
}

// RemoveLater queues the deletion of rootfs id.
func (p *Pool) RemoveLater(id string) { p.enqueue(rootfsJob{id: id}) }

// recycleLater queues rootfs id, made from k's image, to be emptied
// for the pool, or deleted if the pool has enough.
func (p *Pool) recycleLater(id string, k poolKey) {
	p.enqueue(rootfsJob{id: id, reuse: &k})
}

func (p *Pool) enqueue(j rootfsJob) {
	r := &p.rm
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, j)
	r.pending++
	if !r.running {
		r.running = true
		go p.work()
	}
}

func (p *Pool) work() {
	r := &p.rm
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			// Jobs taken by takeQueued may still count in pending.
			r.running = false
			r.mu.Unlock()
			return
		}
		j := r.queue[0]
		r.queue = r.queue[1:]
		r.mu.Unlock()
		if j.reuse == nil || !p.recycle(j.id, *j.reuse) {
			p.Remove(j.id)
		}
		p.jobDone()
	}
}

// jobDone counts a job taken from the queue as done.
func (p *Pool) jobDone() {
	r := &p.rm
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending--
	if r.pending == 0 {
		r.idle.Broadcast()
	}
}

// Wait returns once the queued deletions are done: image
// deletions wait (Quiesce), so that a removed container's layer
// does not keep its image in use.
func (p *Pool) Wait() {
	r := &p.rm
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.pending > 0 {
		r.idle.Wait()
	}
}

func (p *Pool) Remove(id string) {
	if err := p.store.RemoveRootfs(context.Background(), id); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		p.log.Warn("removing rootfs", "rootfs", id, "err", err)
	}
}

// Sweep queues the deletion of the writable layers that owned does not
// name: left by a daemon that died between deleting a container's record
// and its layer, or between creating a layer and its record, and the
// spares of the pool.
func (p *Pool) Sweep(ctx context.Context, owned map[string]bool) {
	ids, err := p.store.Rootfses(ctx)
	if err != nil {
		p.log.Warn("listing rootfs layers", "err", err)
		return
	}
	for _, id := range ids {
		if !owned[id] {
			p.log.Debug("removing a rootfs no container owns", "rootfs", id)
			p.RemoveLater(id)
		}
	}
}
