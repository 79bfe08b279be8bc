package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/engine/container"
)

// enterAsync starts an enter and, once it is queued, returns where its
// release (nil on an error) will come.
func enterAsync(t *testing.T, ctx context.Context, g *startGate) chan func() {
	t.Helper()
	return enterSince(t, ctx, g, time.Now())
}

// enterSince is enterAsync for a start waiting since since.
func enterSince(t *testing.T, ctx context.Context, g *startGate, since time.Time) chan func() {
	t.Helper()
	before := g.queued()
	got := make(chan func(), 1)
	go func() {
		release, err := g.enter(ctx, since)
		if err != nil {
			release = nil
		}
		got <- release
	}()
	for deadline := time.Now().Add(10 * time.Second); g.queued() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("enter did not queue at a full gate")
		}
	}
	return got
}

// firstPassed waits until one of waiters (nil ones are done) has a slot
// and returns its index.
func firstPassed(t *testing.T, waiters []chan func()) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for i, w := range waiters {
			if w != nil && passed(w) {
				return i
			}
		}
	}
	t.Fatal("no waiting start got the released slot")
	return -1
}

func passed(c chan func()) bool {
	select {
	case r := <-c:
		c <- r
		return true
	default:
		return false
	}
}

func TestStartGateOrder(t *testing.T) {
	g := newStartGate(2, time.Hour)
	ctx := context.Background()
	r1, _ := g.enter(ctx, time.Now())
	r2, _ := g.enter(ctx, time.Now())
	w1, w2, w3 := enterAsync(t, ctx, g), enterAsync(t, ctx, g), enterAsync(t, ctx, g)
	r1()
	r1() // idempotent: frees one slot only
	first := <-w1
	if first == nil {
		t.Fatal("enter failed")
	}
	if passed(w2) || passed(w3) || g.queued() != 2 {
		t.Fatalf("one release let more than one start in (queued %d)", g.queued())
	}
	r2()
	if (<-w2) == nil {
		t.Fatal("enter failed")
	}
	if passed(w3) {
		t.Fatal("the third waiting start passed before its turn")
	}
	first()
	if (<-w3) == nil {
		t.Fatal("enter failed")
	}
}

// A start that came to the gate late, but whose container was made
// before the others', goes first; equal ages keep their arrival order.
func TestStartGateOldestFirst(t *testing.T) {
	g := newStartGate(1, time.Hour)
	ctx := context.Background()
	base := time.Now()
	r, _ := g.enter(ctx, base)
	young := enterSince(t, ctx, g, base.Add(2*time.Second))
	tie1 := enterSince(t, ctx, g, base.Add(time.Second))
	tie2 := enterSince(t, ctx, g, base.Add(time.Second))
	old := enterSince(t, ctx, g, base)
	order := []chan func(){old, tie1, tie2, young}
	for i := range order {
		r()
		got := firstPassed(t, order)
		if got != i {
			t.Fatalf("waiter %d got the slot, want waiter %d (the oldest, or the first of equals)", got, i)
		}
		r = <-order[i]
		order[i] = nil
	}
	r()
	if g.free != 1 || g.queued() != 0 {
		t.Fatalf("free %d, queued %d after all released", g.free, g.queued())
	}
}

func TestStartGateLease(t *testing.T) {
	g := newStartGate(1, 30*time.Millisecond)
	ctx := context.Background()
	hung, _ := g.enter(ctx, time.Now())
	next := enterAsync(t, ctx, g)
	r := <-next // the lease ends, the slot passes on
	hung()      // late: must not free a second slot
	if g.free != 0 {
		t.Fatalf("free slots = %d while the next start holds the only one", g.free)
	}
	r()
	if g.free != 1 {
		t.Fatalf("free slots = %d after all released, want 1", g.free)
	}
}

func TestStartGateCancel(t *testing.T) {
	g := newStartGate(1, time.Hour)
	release, _ := g.enter(context.Background(), time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	gone := enterAsync(t, ctx, g)
	next := enterAsync(t, context.Background(), g)
	cancel()
	if r := <-gone; r != nil {
		t.Fatal("a cancelled enter got a slot")
	}
	if g.queued() != 1 {
		t.Fatalf("queued = %d after the cancelled start left, want 1", g.queued())
	}
	release()
	if (<-next) == nil {
		t.Fatal("the start behind a cancelled one never got its slot")
	}
	if _, err := g.enter(ctx, time.Now()); !errors.Is(err, context.Canceled) {
		t.Fatalf("enter with a cancelled context at a full gate = %v", err)
	}
	if g.queued() != 0 {
		t.Fatalf("queued = %d after a cancelled enter", g.queued())
	}
}

// A container's first start waits since its creation; a restart, or a
// creation time ahead of the clock, since the request.
func TestStartAge(t *testing.T) {
	now := time.Now()
	created := now.Add(-time.Minute)
	fresh := &container.Container{Created: created}
	if got := startAge(fresh, now); !got.Equal(created) {
		t.Errorf("first start waits since %v, want its creation %v", got, created)
	}
	restarted := &container.Container{Created: created}
	restarted.State.StartedAt = now.Add(-time.Second)
	if got := startAge(restarted, now); !got.Equal(now) {
		t.Errorf("restart waits since %v, want now", got)
	}
	ahead := &container.Container{Created: now.Add(time.Hour)}
	if got := startAge(ahead, now); !got.Equal(now) {
		t.Errorf("creation ahead of the clock: waits since %v, want now", got)
	}
}
