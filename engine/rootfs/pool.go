package rootfs

import (
	"context"
	"slices"
	"sync"
	"time"
)

// spares keeps empty writable layers ready for the images containers
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
type spares struct {
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

// Create gives container id its writable layer on imageID: a spare
// if there is one, else a new one.
func (p *Pool) Create(ctx context.Context, id, imageID string, volatile bool) (string, error) {
	k := poolKey{imageID, volatile}
	sp := &p.spares
	sp.mu.Lock()
	var rid string
	if ids := sp.ready[k]; len(ids) > 0 {
		// Oldest first: every spare takes its turn.
		rid, sp.ready[k] = ids[0], ids[1:]
	}
	sp.touchLocked(p, k)
	sp.creates++
	sp.armTopUpLocked(p)
	sp.mu.Unlock()
	if rid == "" {
		rid = p.takeQueued(k)
	}
	if rid == "" {
		var err error
		if rid, err = p.store.CreateRootfs(ctx, id, imageID, volatile); err != nil {
			return "", err
		}
	}
	p.refill(k)
	return rid, nil
}

// takeQueued empties, for a container about to be made, the layer
// of a removed container of k's image that waits in the remover's queue:
// under load the queue is where the spares are, and emptying one (a few
// directory operations) costs much less than containers/storage's create
// of a layer and the delete the queue would do instead. "" when none is
// queued or it cannot be emptied (it is then deleted).
func (p *Pool) takeQueued(k poolKey) string {
	p.spares.mu.Lock()
	open := p.spares.openLocked()
	p.spares.mu.Unlock()
	if !open {
		return ""
	}
	r := &p.rm
	r.mu.Lock()
	i := slices.IndexFunc(r.queue, func(j rootfsJob) bool { return j.reuse != nil && *j.reuse == k })
	if i < 0 {
		r.mu.Unlock()
		return ""
	}
	j := r.queue[i]
	r.queue = slices.Delete(r.queue, i, i+1)
	r.mu.Unlock()
	defer p.jobDone()
	if !p.empty(j.id) {
		p.Remove(j.id)
		return ""
	}
	return j.id
}

// empty empties rootfs id for another container of its image; false
// means it is fit only for deletion.
func (p *Pool) empty(id string) bool {
	if err := p.store.ResetRootfs(context.Background(), id); err != nil {
		p.log.Debug("emptying a rootfs for reuse", "rootfs", id, "err", err)
		return false
	}
	return true
}

// touchLocked makes k the most recently used key, dropping the least
// recently used one (and its spares) beyond poolKeys.
func (s *spares) touchLocked(pl *Pool, k poolKey) {
	s.recent = slices.DeleteFunc(s.recent, func(o poolKey) bool { return o == k })
	s.recent = append(s.recent, k)
	if len(s.recent) <= poolKeys {
		return
	}
	old := s.recent[0]
	s.recent = s.recent[1:]
	for _, rid := range s.ready[old] {
		pl.RemoveLater(rid)
	}
	delete(s.ready, old)
}

// openLocked reports whether layers may be kept for reuse at all.
func (s *spares) openLocked() bool { return !s.closed && !s.draining }

// wantsLocked reports whether the pool takes one more spare for k.
func (s *spares) wantsLocked(k poolKey) bool {
	return s.openLocked() && len(s.ready[k]) < poolDepth && slices.Contains(s.recent, k)
}

// addLocked keeps rid as a spare for k.
func (s *spares) addLocked(k poolKey, rid string) {
	if s.ready == nil {
		s.ready = map[poolKey][]string{}
	}
	s.ready[k] = append(s.ready[k], rid)
}

// refill makes a spare for k in the background when none is left.
// A container's removal usually gives one back first: no new layer is
// made while the spares go round.
func (p *Pool) refill(k poolKey) {
	sp := &p.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.ready[k]) == 0 {
		sp.fillLocked(p, k, 1)
	}
}

// armTopUpLocked (re)starts the wait for a pause in creates.
func (s *spares) armTopUpLocked(pl *Pool) {
	if s.idle == nil {
		s.idle = time.AfterFunc(poolIdle, func() { pl.topUp() })
		return
	}
	s.idle.Reset(poolIdle)
}

// topUp makes spares of the image last used up to poolReserve, one
// at a time, stopping at the next create: under load the removals' layers
// are the spares, and a layer made then would take a create's CPU.
func (p *Pool) topUp() {
	sp := &p.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.recent) > 0 {
		sp.fillLocked(p, sp.recent[len(sp.recent)-1], poolReserve)
	}
}

// fillLocked makes spares for k in the background until it has want, or
// until a create comes (a fill already running for k is left to go on).
func (s *spares) fillLocked(pl *Pool, k poolKey, want int) {
	if s.filling[k] || len(s.ready[k]) >= want || !s.wantsLocked(k) {
		return
	}
	since := s.creates
	if s.filling == nil {
		s.filling = map[poolKey]bool{}
	}
	s.filling[k] = true
	go func() {
		for {
			if !pl.makeSpare(k) {
				break
			}
			s.mu.Lock()
			more := len(s.ready[k]) < want && s.wantsLocked(k) && s.creates == since
			s.mu.Unlock()
			if !more {
				break
			}
		}
		s.mu.Lock()
		delete(s.filling, k)
		s.mu.Unlock()
	}()
}

// makeSpare makes one spare layer for k; false when none could be made or
// the pool no longer wants it.
func (p *Pool) makeSpare(k poolKey) bool {
	sp := &p.spares
	// Held until the spare is in the pool, where Quiesce finds it.
	sp.gate.RLock()
	defer sp.gate.RUnlock()
	rid, err := p.store.CreateRootfs(context.Background(), "", k.image, k.volatile)
	if err != nil {
		p.log.Debug("making a spare rootfs", "image", k.image, "err", err)
		return false
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.wantsLocked(k) {
		p.RemoveLater(rid)
		return false
	}
	sp.addLocked(k, rid)
	return true
}

// recycle empties rootfs id and keeps it as a spare for k, if the
// pool wants one; false means the caller deletes it.
func (p *Pool) recycle(id string, k poolKey) bool {
	sp := &p.spares
	sp.mu.Lock()
	want := sp.wantsLocked(k)
	sp.mu.Unlock()
	if !want {
		return false
	}
	if !p.empty(id) {
		return false
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.wantsLocked(k) {
		return false
	}
	sp.addLocked(k, id)
	return true
}

// drain queues the deletion of every spare.
func (p *Pool) drain(closing bool) {
	sp := &p.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.closed = sp.closed || closing
	if closing && sp.idle != nil {
		sp.idle.Stop()
	}
	for k, ids := range sp.ready {
		for _, rid := range ids {
			p.RemoveLater(rid)
		}
		delete(sp.ready, k)
	}
}

// Quiesce prepares an image deletion: no spare is made or kept
// while it runs, and the spares and the layers of removed containers are
// gone, so that only containers keep images in use. The caller calls the
// result when done.
func (p *Pool) Quiesce() func() {
	sp := &p.spares
	sp.gate.Lock()
	sp.mu.Lock()
	sp.draining = true
	sp.mu.Unlock()
	p.drain(false)
	p.Wait()
	return func() {
		sp.mu.Lock()
		sp.draining = false
		sp.mu.Unlock()
		sp.gate.Unlock()
	}
}
