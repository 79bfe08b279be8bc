package engine

import (
	"context"
	"slices"
	"sync"
	"time"
)

// rootfsPool keeps empty writable layers ready for the images containers
// were last made from. Making one through containers/storage takes 6-10
// ms of directory and JSON writes, the most of a docker create, and
// deleting one as much; a removed container's layer is emptied instead
// and kept for the next container of its image (the overlay drivers; see
// storage.ResetRootfs), and when none is there one is made in the
// background after a create. The spares belong to no container: the
// start-up sweep deletes those a daemon that died left, Close and image
// deletions delete the others.
//
// Once creates have paused for poolIdle, the image last used gets up to
// poolReserve spares (topUp): the first wave of concurrent runs after a
// quiet spell (a test suite's containers started together) then takes
// spares instead of making its layers one at a time behind
// containers/storage's lock, which cost the last of ten 50-80 ms.
type rootfsPool struct {
	mu       sync.Mutex
	ready    map[poolKey][]string
	filling  map[poolKey]bool
	recent   []poolKey // least recently used first, at most poolKeys
	closed   bool
	draining bool // an image deletion runs: keep no spare
	// creates counts the creates served, so that a top-up stops when a
	// create comes; idle fires the top-up poolIdle after the last create.
	creates uint64
	idle    *time.Timer
	// gate keeps refills out while an image deletion runs: a spare made
	// in the middle would keep the image in use.
	gate sync.RWMutex
}

type poolKey struct {
	image    string
	volatile bool
}

const (
	// poolKeys bounds the images (and kinds of layer) the pool keeps
	// spares for, poolDepth the spares of each.
	poolKeys  = 4
	poolDepth = 16
	// poolReserve is how many spares of the image last used the pool
	// makes once creates have paused for poolIdle.
	poolReserve = 8
	poolIdle    = time.Second
)

// createRootfs gives container id its writable layer on imageID: a spare
// if there is one, else a new one.
func (e *Engine) createRootfs(ctx context.Context, id, imageID string, volatile bool) (string, error) {
	k := poolKey{imageID, volatile}
	p := &e.pool
	p.mu.Lock()
	var rid string
	if ids := p.ready[k]; len(ids) > 0 {
		// Oldest first: every spare takes its turn.
		rid, p.ready[k] = ids[0], ids[1:]
	}
	p.touchLocked(e, k)
	p.creates++
	p.armTopUpLocked(e)
	p.mu.Unlock()
	if rid == "" {
		rid = e.takeQueuedRootfs(k)
	}
	if rid == "" {
		var err error
		if rid, err = e.images.CreateRootfs(ctx, id, imageID, volatile); err != nil {
			return "", err
		}
	}
	e.refillRootfs(k)
	return rid, nil
}

// takeQueuedRootfs empties, for a container about to be made, the layer
// of a removed container of k's image that waits in the remover's queue:
// under load the queue is where the spares are, and emptying one (a few
// directory operations) costs much less than containers/storage's create
// of a layer and the delete the queue would do instead. "" when none is
// queued or it cannot be emptied (it is then deleted).
func (e *Engine) takeQueuedRootfs(k poolKey) string {
	e.pool.mu.Lock()
	open := e.pool.openLocked()
	e.pool.mu.Unlock()
	if !open {
		return ""
	}
	r := &e.rootfs
	r.mu.Lock()
	i := slices.IndexFunc(r.queue, func(j rootfsJob) bool { return j.reuse != nil && *j.reuse == k })
	if i < 0 {
		r.mu.Unlock()
		return ""
	}
	j := r.queue[i]
	r.queue = slices.Delete(r.queue, i, i+1)
	r.mu.Unlock()
	defer e.rootfsJobDone()
	if !e.emptyRootfs(j.id) {
		e.removeRootfs(j.id)
		return ""
	}
	return j.id
}

// emptyRootfs empties rootfs id for another container of its image; false
// means it is fit only for deletion.
func (e *Engine) emptyRootfs(id string) bool {
	if err := e.images.ResetRootfs(context.Background(), id); err != nil {
		e.log.Debug("emptying a rootfs for reuse", "rootfs", id, "err", err)
		return false
	}
	return true
}

// touchLocked makes k the most recently used key, dropping the least
// recently used one (and its spares) beyond poolKeys.
func (p *rootfsPool) touchLocked(e *Engine, k poolKey) {
	p.recent = slices.DeleteFunc(p.recent, func(o poolKey) bool { return o == k })
	p.recent = append(p.recent, k)
	if len(p.recent) <= poolKeys {
		return
	}
	old := p.recent[0]
	p.recent = p.recent[1:]
	for _, rid := range p.ready[old] {
		e.removeRootfsLater(rid)
	}
	delete(p.ready, old)
}

// openLocked reports whether layers may be kept for reuse at all.
func (p *rootfsPool) openLocked() bool { return !p.closed && !p.draining }

// wantsLocked reports whether the pool takes one more spare for k.
func (p *rootfsPool) wantsLocked(k poolKey) bool {
	return p.openLocked() && len(p.ready[k]) < poolDepth && slices.Contains(p.recent, k)
}

// addLocked keeps rid as a spare for k.
func (p *rootfsPool) addLocked(k poolKey, rid string) {
	if p.ready == nil {
		p.ready = map[poolKey][]string{}
	}
	p.ready[k] = append(p.ready[k], rid)
}

// refillRootfs makes a spare for k in the background when none is left.
// A container's removal usually gives one back first: no new layer is
// made while the spares go round.
func (e *Engine) refillRootfs(k poolKey) {
	p := &e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ready[k]) == 0 {
		p.fillLocked(e, k, 1)
	}
}

// armTopUpLocked (re)starts the wait for a pause in creates.
func (p *rootfsPool) armTopUpLocked(e *Engine) {
	if p.idle == nil {
		p.idle = time.AfterFunc(poolIdle, func() { e.topUpRootfs() })
		return
	}
	p.idle.Reset(poolIdle)
}

// topUpRootfs makes spares of the image last used up to poolReserve, one
// at a time, stopping at the next create: under load the removals' layers
// are the spares, and a layer made then would take a create's CPU.
func (e *Engine) topUpRootfs() {
	p := &e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.recent) > 0 {
		p.fillLocked(e, p.recent[len(p.recent)-1], poolReserve)
	}
}

// fillLocked makes spares for k in the background until it has want, or
// until a create comes (a fill already running for k is left to go on).
func (p *rootfsPool) fillLocked(e *Engine, k poolKey, want int) {
	if p.filling[k] || len(p.ready[k]) >= want || !p.wantsLocked(k) {
		return
	}
	since := p.creates
	if p.filling == nil {
		p.filling = map[poolKey]bool{}
	}
	p.filling[k] = true
	go func() {
		for {
			if !e.makeSpare(k) {
				break
			}
			p.mu.Lock()
			more := len(p.ready[k]) < want && p.wantsLocked(k) && p.creates == since
			p.mu.Unlock()
			if !more {
				break
			}
		}
		p.mu.Lock()
		delete(p.filling, k)
		p.mu.Unlock()
	}()
}

// makeSpare makes one spare layer for k; false when none could be made or
// the pool no longer wants it.
func (e *Engine) makeSpare(k poolKey) bool {
	p := &e.pool
	// Held until the spare is in the pool, where quiesceRootfs finds it.
	p.gate.RLock()
	defer p.gate.RUnlock()
	rid, err := e.images.CreateRootfs(context.Background(), "", k.image, k.volatile)
	if err != nil {
		e.log.Debug("making a spare rootfs", "image", k.image, "err", err)
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.wantsLocked(k) {
		e.removeRootfsLater(rid)
		return false
	}
	p.addLocked(k, rid)
	return true
}

// recycleRootfs empties rootfs id and keeps it as a spare for k, if the
// pool wants one; false means the caller deletes it.
func (e *Engine) recycleRootfs(id string, k poolKey) bool {
	p := &e.pool
	p.mu.Lock()
	want := p.wantsLocked(k)
	p.mu.Unlock()
	if !want {
		return false
	}
	if !e.emptyRootfs(id) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.wantsLocked(k) {
		return false
	}
	p.addLocked(k, id)
	return true
}

// drainRootfsPool queues the deletion of every spare.
func (e *Engine) drainRootfsPool(closing bool) {
	p := &e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = p.closed || closing
	if closing && p.idle != nil {
		p.idle.Stop()
	}
	for k, ids := range p.ready {
		for _, rid := range ids {
			e.removeRootfsLater(rid)
		}
		delete(p.ready, k)
	}
}

// quiesceRootfs prepares an image deletion: no spare is made or kept
// while it runs, and the spares and the layers of removed containers are
// gone, so that only containers keep images in use. The caller calls the
// result when done.
func (e *Engine) quiesceRootfs() func() {
	p := &e.pool
	p.gate.Lock()
	p.mu.Lock()
	p.draining = true
	p.mu.Unlock()
	e.drainRootfsPool(false)
	e.waitRootfsRemovals()
	return func() {
		p.mu.Lock()
		p.draining = false
		p.mu.Unlock()
		p.gate.Unlock()
	}
}
