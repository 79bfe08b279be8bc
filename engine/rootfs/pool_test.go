package rootfs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeRootfs is the pool's Layers, whose calls can be held (a channel per
// layer ID) and are counted.
type fakeRootfs struct {
	mu      sync.Mutex
	n       int
	created []string
	reset   []string
	removed []string
	hold    map[string]chan struct{} // a call for this ID waits for close
	entered chan string              // each held call, as it starts waiting
}

func newFakeRootfs() *fakeRootfs {
	return &fakeRootfs{hold: map[string]chan struct{}{}, entered: make(chan string, 16)}
}

func (f *fakeRootfs) wait(id string) {
	f.mu.Lock()
	ch := f.hold[id]
	f.mu.Unlock()
	if ch != nil {
		f.entered <- id
		<-ch
	}
}

// CreateRootfs makes a layer; a hold on "create" holds every create.
func (f *fakeRootfs) CreateRootfs(_ context.Context, _, _ string, _ bool) (string, error) {
	f.wait("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("new%d", f.n)
	f.created = append(f.created, id)
	return id, nil
}

func (f *fakeRootfs) ResetRootfs(_ context.Context, id string) error {
	return f.record(&f.reset, id)
}

func (f *fakeRootfs) Rootfses(context.Context) ([]string, error) { return nil, nil }

func (f *fakeRootfs) RemoveRootfs(_ context.Context, id string) error {
	return f.record(&f.removed, id)
}

// record notes a call for id in calls, once a hold on id is released.
func (f *fakeRootfs) record(calls *[]string, id string) error {
	f.wait(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	*calls = append(*calls, id)
	return nil
}

// waitRemovals is Wait with a deadline.
func waitRemovals(t *testing.T, p *Pool) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("queued rootfs jobs never finished")
	}
}

// TestCreateTakesQueuedRootfs: a create finds the layer of a removed
// container of its image in the remover's queue and empties it instead of
// making a layer, and the queue still drains when its worker went idle
// while the create held a job (the worker used to be started only when
// the pending count rose to one, so a job queued then waited forever).
func TestCreateTakesQueuedRootfs(t *testing.T) {
	f := newFakeRootfs()
	p := New(f, nil)
	k := poolKey{image: "sha256:img", volatile: true}
	p.spares.mu.Lock()
	p.spares.touchLocked(p, k)
	p.spares.mu.Unlock()

	releaseX, releaseA := make(chan struct{}), make(chan struct{})
	f.hold["x"], f.hold["a"] = releaseX, releaseA
	p.RemoveLater("x") // the worker is busy with it
	if id := <-f.entered; id != "x" {
		t.Fatalf("held call for %s, want x", id)
	}
	p.recycleLater("a", k)

	got := make(chan string, 1)
	go func() {
		id, err := p.Create(context.Background(), "c1", k.image, k.volatile)
		if err != nil {
			t.Error(err)
		}
		got <- id
	}()
	if id := <-f.entered; id != "a" {
		t.Fatalf("held call for %s, want the queued a", id)
	}
	close(releaseX) // the worker finds the queue empty and stops
	for idle := false; !idle; time.Sleep(time.Millisecond) {
		p.rm.mu.Lock()
		idle = !p.rm.running
		p.rm.mu.Unlock()
	}
	p.RemoveLater("y") // needs a worker again
	close(releaseA)
	if id := <-got; id != "a" {
		t.Errorf("create got rootfs %q, want the queued a", id)
	}
	waitRemovals(t, p)

	f.mu.Lock()
	defer f.mu.Unlock()
	if fmt.Sprint(f.reset) != "[a]" {
		t.Errorf("reset %v, want [a]", f.reset)
	}
	if fmt.Sprint(f.removed) != "[x y]" {
		t.Errorf("removed %v, want [x y]", f.removed)
	}
	// Only the pool's refill in the background may have made a layer.
	for _, id := range f.created {
		if id == "a" {
			t.Errorf("created %v", f.created)
		}
	}
}

// spareCount is how many spares the pool has for k and whether a fill runs.
func spareCount(p *Pool, k poolKey) (int, bool) {
	p.spares.mu.Lock()
	defer p.spares.mu.Unlock()
	return len(p.spares.ready[k]), p.spares.filling[k]
}

// waitFill waits (at most 10 s) until no fill runs for k.
func waitFill(t *testing.T, p *Pool, k poolKey) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n, filling := spareCount(p, k); !filling {
			return n
		}
	}
	t.Fatal("the pool's fill never ended")
	return 0
}

// TestTopUpRootfs: after a pause in creates the image last used gets
// poolReserve spares, and a create that comes meanwhile stops the top-up
// after the layer being made.
func TestTopUpRootfs(t *testing.T) {
	f := newFakeRootfs()
	p := New(f, nil)
	k := poolKey{image: "sha256:img"}
	other := poolKey{image: "sha256:other"}
	for _, key := range []poolKey{other, k} { // k is the image last used
		if _, err := p.Create(context.Background(), "c", key.image, key.volatile); err != nil {
			t.Fatal(err)
		}
		waitFill(t, p, key) // the refill of the empty pool
	}
	p.spares.idle.Stop() // the test tops up by itself
	p.topUp()
	if n := waitFill(t, p, k); n != poolReserve {
		t.Errorf("%d spares after the top-up, want %d", n, poolReserve)
	}
	if n, _ := spareCount(p, other); n != 1 {
		t.Errorf("the image used before has %d spares, want its 1", n)
	}

	// Emptied: the next top-up makes layers, and a create stops it.
	p.spares.mu.Lock()
	p.spares.ready[k] = nil
	p.spares.mu.Unlock()
	release := make(chan struct{})
	f.mu.Lock()
	f.hold["create"] = release
	f.mu.Unlock()
	p.topUp()
	<-f.entered
	p.spares.mu.Lock()
	p.spares.creates++ // as Create does
	p.spares.mu.Unlock()
	close(release)
	if n := waitFill(t, p, k); n != 1 {
		t.Errorf("%d spares after a create came during the top-up, want the 1 being made", n)
	}

	p.drain(true)
	p.topUp()
	if n := waitFill(t, p, k); n != 0 {
		t.Errorf("%d spares made after Close", n)
	}
	waitRemovals(t, p)
}
