package engine

import (
	"context"
	"slices"
	"sync"
)

// rootfsPool keeps one empty writable layer ready for each of the images
// containers were last made from. Making one through containers/storage
// takes 6-10 ms of directory and JSON writes, the most of a docker create;
// taking a ready one takes nothing, and the next is made in the
// background. The spares belong to no container: the start-up sweep
// deletes those a daemon that died left, Close and image deletions delete
// the others.
type rootfsPool struct {
	mu      sync.Mutex
	ready   map[poolKey]string
	filling map[poolKey]bool
	recent  []poolKey // least recently used first, at most poolKeys
	closed  bool
	// gate keeps refills out while an image deletion runs: a spare made
	// in the middle would keep the image in use.
	gate sync.RWMutex
}

type poolKey struct {
	image    string
	volatile bool
}

// poolKeys bounds the images (and kinds of layer) the pool keeps a spare
// for.
const poolKeys = 4

// createRootfs gives container id its writable layer on imageID: a spare
// if there is one, else a new one.
func (e *Engine) createRootfs(ctx context.Context, id, imageID string, volatile bool) (string, error) {
	k := poolKey{imageID, volatile}
	p := &e.pool
	p.mu.Lock()
	rid, ok := p.ready[k]
	delete(p.ready, k)
	p.touchLocked(e, k)
	p.mu.Unlock()
	if !ok {
		var err error
		if rid, err = e.images.CreateRootfs(ctx, id, imageID, volatile); err != nil {
			return "", err
		}
	}
	e.refillRootfs(k)
	return rid, nil
}

// touchLocked makes k the most recently used key, dropping the least
// recently used one (and its spare) beyond poolKeys.
func (p *rootfsPool) touchLocked(e *Engine, k poolKey) {
	p.recent = slices.DeleteFunc(p.recent, func(o poolKey) bool { return o == k })
	p.recent = append(p.recent, k)
	if len(p.recent) <= poolKeys {
		return
	}
	old := p.recent[0]
	p.recent = p.recent[1:]
	if rid, ok := p.ready[old]; ok {
		delete(p.ready, old)
		e.removeRootfsLater(rid)
	}
}

// refillRootfs makes a spare for k in the background unless there is one.
func (e *Engine) refillRootfs(k poolKey) {
	p := &e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.filling[k] || p.ready[k] != "" {
		return
	}
	if p.filling == nil {
		p.filling, p.ready = map[poolKey]bool{}, map[poolKey]string{}
	}
	p.filling[k] = true
	go func() {
		// Held until the spare is in the pool, where quiesceRootfs finds it.
		p.gate.RLock()
		defer p.gate.RUnlock()
		rid, err := e.images.CreateRootfs(context.Background(), "", k.image, k.volatile)
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.filling, k)
		if err != nil {
			e.log.Debug("making a spare rootfs", "image", k.image, "err", err)
			return
		}
		if p.closed || p.ready[k] != "" || !slices.Contains(p.recent, k) {
			e.removeRootfsLater(rid)
			return
		}
		p.ready[k] = rid
	}()
}

// drainRootfsPool queues the deletion of every spare.
func (e *Engine) drainRootfsPool(closing bool) {
	p := &e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = p.closed || closing
	for k, rid := range p.ready {
		delete(p.ready, k)
		e.removeRootfsLater(rid)
	}
}

// quiesceRootfs prepares an image deletion: no spare is made while it
// runs, and the spares and the layers of removed containers are gone, so
// that only containers keep images in use. The caller calls the result
// when done.
func (e *Engine) quiesceRootfs() func() {
	e.pool.gate.Lock()
	e.drainRootfsPool(false)
	e.waitRootfsRemovals()
	return e.pool.gate.Unlock
}
