package engine

import (
	"context"
	"slices"
	"sync"
	"time"
)

// startGate bounds how many container starts run at once, and lets the
// others wait their turn, oldest first.
//
// A start is CPU work in three processes (hutch-runtime, the container's
// init, the shim) besides the engine. When more starts run than there are
// CPUs, the kernel time-slices all of them, and which start finishes first
// is luck: 100 containers by 10 clients had a p99 at 1.8 times their
// median. With one start per CPU let through and the others queued in
// order, starts end about in the order they came, and the p99 came down
// to 1.2-1.5 times the median at the same throughput.
//
// The oldest is the start whose docker run began first, not the first to
// reach the gate: a container whose create was slow (the first containers
// of a burst make their writable layers one at a time, behind
// containers/storage's lock) would otherwise queue behind every container
// created after it, and its run would take the create's delay plus a
// whole queue.
//
// A start that waits on something other than the CPU (a hung shim, a
// slow FUSE mount) gives its slot back after the lease, so it delays the
// queue by at most that long.
type startGate struct {
	lease time.Duration

	mu      sync.Mutex
	free    int
	waiting []waiter // oldest first
}

// waiter is a start waiting for a slot since the time it is served by.
type waiter struct {
	since time.Time
	turn  chan struct{}
}

// startLease is how long a start keeps its slot at most. A start alone
// takes about 30 ms; under a burst about 50.
const startLease = time.Second

func newStartGate(n int, lease time.Duration) *startGate {
	return &startGate{free: max(n, 1), lease: lease}
}

// enter waits for a slot, behind the starts waiting since before since
// and ahead of the others. The release it returns is idempotent; the slot
// is also released when the lease ends. An error is ctx's: the client
// went away while waiting.
func (g *startGate) enter(ctx context.Context, since time.Time) (release func(), err error) {
	g.mu.Lock()
	if g.free > 0 && len(g.waiting) == 0 {
		g.free--
		g.mu.Unlock()
		return g.leased(), nil
	}
	turn := make(chan struct{})
	// After every waiter as old or older: equal times keep arrival order.
	i := len(g.waiting)
	for i > 0 && g.waiting[i-1].since.After(since) {
		i--
	}
	g.waiting = slices.Insert(g.waiting, i, waiter{since, turn})
	g.mu.Unlock()
	select {
	case <-turn:
		return g.leased(), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.IndexFunc(g.waiting, func(w waiter) bool { return w.turn == turn }); i >= 0 {
		g.waiting = slices.Delete(g.waiting, i, i+1)
		return nil, ctx.Err()
	}
	// The slot came with the cancellation: the next in line gets it.
	g.passLocked()
	return nil, ctx.Err()
}

// leased is the release of a slot just taken, run by the caller or by the
// lease's end, whichever comes first.
func (g *startGate) leased() func() {
	var once sync.Once
	free := func() {
		once.Do(func() {
			g.mu.Lock()
			g.passLocked()
			g.mu.Unlock()
		})
	}
	t := time.AfterFunc(g.lease, free)
	return func() {
		t.Stop()
		free()
	}
}

// passLocked hands a released slot to the oldest waiting start, or frees it.
func (g *startGate) passLocked() {
	if len(g.waiting) == 0 {
		g.free++
		return
	}
	close(g.waiting[0].turn)
	g.waiting = g.waiting[1:]
}

// queued is how many starts wait.
func (g *startGate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}
