package apiserver

import (
	"context"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/hutch-engine/hutch/engine"
)

// fakeSizes lists c1 and c2; c1's sizes are known, c2's are not.
type fakeSizes struct {
	fakeBackend
	mu    sync.Mutex
	asked []string
}

func (f *fakeSizes) ContainerList(context.Context, engine.ListRequest) ([]containertypes.Summary, error) {
	return []containertypes.Summary{{ID: "c1"}, {ID: "c2"}}, nil
}

func (f *fakeSizes) ContainerInspect(_ context.Context, ref string) (containertypes.InspectResponse, error) {
	return containertypes.InspectResponse{ID: ref, State: &containertypes.State{}}, nil
}

func (f *fakeSizes) ContainerSize(_ context.Context, ref string) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, ref)
	if ref != "c1" {
		return 0, 0, errdefs.ErrNotFound.WithMessage("no writable layer")
	}
	return 10, 110, nil
}

func (f *fakeSizes) reset() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.asked
	f.asked = nil
	return a
}

// TestContainerSizes: size=1 of list and inspect fills SizeRw and
// SizeRootFs where the size is known, leaves them out where it is not,
// and without size=1 no size is computed (it walks the layer's files).
func TestContainerSizes(t *testing.T) {
	f := &fakeSizes{}
	c, _ := serveFake(t, f)
	ctx := context.Background()

	list, err := c.ContainerList(ctx, client.ContainerListOptions{Size: true})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if got := list.Items[0]; got.SizeRw != 10 || got.SizeRootFs != 110 {
		t.Errorf("c1 listed with SizeRw %d, SizeRootFs %d; want 10, 110", got.SizeRw, got.SizeRootFs)
	}
	if got := list.Items[1]; got.SizeRw != 0 || got.SizeRootFs != 0 {
		t.Errorf("c2 (size unknown) listed with SizeRw %d, SizeRootFs %d", got.SizeRw, got.SizeRootFs)
	}
	if asked := f.reset(); len(asked) != 2 {
		t.Errorf("sizes asked for %v, want c1 and c2", asked)
	}
	if _, err := c.ContainerList(ctx, client.ContainerListOptions{}); err != nil {
		t.Fatal(err)
	}
	if asked := f.reset(); len(asked) != 0 {
		t.Errorf("list without size=1 asked for sizes of %v", asked)
	}

	in, err := c.ContainerInspect(ctx, "c1", client.ContainerInspectOptions{Size: true})
	if err != nil {
		t.Fatal(err)
	}
	if rw, root := in.Container.SizeRw, in.Container.SizeRootFs; rw == nil || root == nil || *rw != 10 || *root != 110 {
		t.Errorf("inspect --size of c1: SizeRw %v, SizeRootFs %v; want 10, 110", rw, root)
	}
	in, err = c.ContainerInspect(ctx, "c2", client.ContainerInspectOptions{Size: true})
	if err != nil || in.Container.SizeRw != nil || in.Container.SizeRootFs != nil {
		t.Errorf("inspect --size of c2 (size unknown): %v, %v, %v", in.Container.SizeRw, in.Container.SizeRootFs, err)
	}
	f.reset()
	in, err = c.ContainerInspect(ctx, "c1", client.ContainerInspectOptions{})
	if err != nil || in.Container.SizeRw != nil {
		t.Errorf("inspect without size: SizeRw %v, %v", in.Container.SizeRw, err)
	}
	if asked := f.reset(); len(asked) != 0 {
		t.Errorf("inspect without size=1 asked for sizes of %v", asked)
	}
}
