package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// enterAsync starts an enter and, once it is queued, returns where its
// release (nil on an error) will come.
func enterAsync(t *testing.T, ctx context.Context, g *startGate) chan func() {
	t.Helper()
	before := g.queued()
	got := make(chan func(), 1)
	go func() {
		release, err := g.enter(ctx)
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
	r1, _ := g.enter(ctx)
	r2, _ := g.enter(ctx)
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

func TestStartGateLease(t *testing.T) {
	g := newStartGate(1, 30*time.Millisecond)
	ctx := context.Background()
	hung, _ := g.enter(ctx)
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
	release, _ := g.enter(context.Background())
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
	if _, err := g.enter(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("enter with a cancelled context at a full gate = %v", err)
	}
	if g.queued() != 0 {
		t.Fatalf("queued = %d after a cancelled enter", g.queued())
	}
}
