package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/events"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// newListEngine is an engine with a container store and images, for the
// rules of list and prune.
func newListEngine(t *testing.T, imgs ...*imagestore.Image) *Engine {
	t.Helper()
	cs, err := container.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &Engine{images: imagestoretest.New(imgs...), containers: cs, runs: newRuns(), restarts: newRestarts(), events: events.New(), log: slog.New(slog.DiscardHandler)}
}

// addContainer records a container named name of image id, with labels,
// made at created, and runs or ends it as state says ("running",
// "exited" or "" for created).
func addContainer(t *testing.T, e *Engine, name, imageID string, labels map[string]string, created time.Time, state string) {
	t.Helper()
	ctx := context.Background()
	c := &container.Container{
		Name: name, ImageID: imageID, Image: imageID, Created: created,
		Config:     &containertypes.Config{Labels: labels},
		HostConfig: &containertypes.HostConfig{},
	}
	if err := e.containers.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if state == "" {
		return
	}
	err := e.containers.Update(ctx, c.ID, func(c *container.Container) error {
		if err := c.State.SetRunning(100, created); err != nil || state == "running" {
			return err
		}
		return c.State.SetExited(container.ExitInfo{Code: 1, FinishedAt: created.Add(time.Second)})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func names(list []containertypes.Summary) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Names[0][1:])
	}
	slices.Sort(out)
	return out
}

// docker ps --filter ancestor= takes the image's descendants too: the
// images committed or built from it, at any depth, as Docker's
// populateImageFilterByParents.
func TestContainerListAncestor(t *testing.T) {
	base := imagestoretest.Image(1, "docker.io/library/busybox:latest")
	child := imagestoretest.Image(2, "docker.io/library/other:1")
	child.Parent = base.ID
	grandchild := imagestoretest.Image(3)
	grandchild.Parent = child.ID
	unrelated := imagestoretest.Image(4, "docker.io/library/alpine:latest")
	e := newListEngine(t, base, child, grandchild, unrelated)
	now := time.Now()
	addContainer(t, e, "base", base.ID, nil, now, "running")
	addContainer(t, e, "child", child.ID, nil, now, "running")
	addContainer(t, e, "grand", grandchild.ID, nil, now, "running")
	addContainer(t, e, "other", unrelated.ID, nil, now, "running")
	tests := []struct {
		ancestors []string
		want      []string
	}{
		{[]string{"busybox"}, []string{"base", "child", "grand"}},
		{[]string{"busybox:latest"}, []string{"base", "child", "grand"}},
		{[]string{base.ID}, []string{"base", "child", "grand"}},
		{[]string{base.ID[7:19]}, []string{"base", "child", "grand"}},
		{[]string{"other:1"}, []string{"child", "grand"}},
		{[]string{grandchild.ID}, []string{"grand"}},
		{[]string{"alpine", "other:1"}, []string{"child", "grand", "other"}},
		{[]string{"nosuch"}, nil},
	}
	for _, tc := range tests {
		raw, err := json.Marshal(container.Filters{}.Add("ancestor", tc.ancestors...))
		if err != nil {
			t.Fatal(err)
		}
		list, err := e.ContainerList(context.Background(), ListRequest{Filters: string(raw)})
		if err != nil {
			t.Fatalf("ancestor=%v: %v", tc.ancestors, err)
		}
		if got := names(list); !slices.Equal(got, tc.want) {
			t.Errorf("ancestor=%v: %v, want %v", tc.ancestors, got, tc.want)
		}
	}
}

// docker container prune takes until, label and label! (Docker's
// containersAcceptedFilters) and no other filter; it removes created and
// exited containers, never running ones, and sends a prune event.
func TestContainerPruneFilters(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	setup := func(t *testing.T) *Engine {
		e := newListEngine(t)
		addContainer(t, e, "old-exited", "sha256:1", map[string]string{"keep": "yes", "tier": "db"}, old, "exited")
		addContainer(t, e, "old-created", "sha256:1", map[string]string{"tier": "db"}, old, "")
		addContainer(t, e, "new-exited", "sha256:1", map[string]string{"keep": "no"}, time.Now(), "exited")
		addContainer(t, e, "running", "sha256:1", nil, old, "running")
		return e
	}
	tests := []struct {
		filters string
		pruned  []string
	}{
		{"", []string{"new-exited", "old-created", "old-exited"}},
		{`{"until":{"1h":true}}`, []string{"old-created", "old-exited"}},
		{`{"label":{"tier=db":true}}`, []string{"old-created", "old-exited"}},
		{`{"label":{"tier=db":true,"keep":true}}`, []string{"old-exited"}},
		{`{"label!":{"keep":true}}`, []string{"old-created"}},
		{`{"label!":{"keep=yes":true}}`, []string{"new-exited", "old-created"}},
		// label! drops only what matches all of its values, as Docker's.
		{`{"label!":{"keep":true,"tier":true}}`, []string{"new-exited", "old-created"}},
		{`{"until":{"1h":true},"label!":{"keep":true}}`, []string{"old-created"}},
	}
	for _, tc := range tests {
		t.Run(tc.filters, func(t *testing.T) {
			e := setup(t)
			before, err := e.ContainerList(ctx, ListRequest{All: true})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]string{}
			for _, c := range before {
				byID[c.ID] = c.Names[0][1:]
			}
			rep, err := e.ContainerPrune(ctx, tc.filters)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range rep.ContainersDeleted {
				got = append(got, byID[id])
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.pruned) {
				t.Errorf("pruned %v, want %v", got, tc.pruned)
			}
			past, _, stop := e.events.Follow(time.Unix(1, 0))
			stop()
			var pruneEvents int
			for _, m := range past {
				if m.Type == eventtypes.ContainerEventType && m.Action == eventtypes.ActionPrune && m.Actor.Attributes["reclaimed"] == "0" {
					pruneEvents++
				}
			}
			if pruneEvents != 1 {
				t.Errorf("%d prune events with reclaimed=0, want 1", pruneEvents)
			}
		})
	}
	e := setup(t)
	for _, f := range []string{`{"name":{"old":true}}`, `{"status":{"exited":true}}`, `{"until":{"a":true,"b":true}}`, `{"until":{"yesterday":true}}`} {
		if _, err := e.ContainerPrune(ctx, f); !errdefs.IsInvalidArgument(err) {
			t.Errorf("prune %s = %v, want invalid argument", f, err)
		}
	}
	if list, _ := e.ContainerList(ctx, ListRequest{All: true}); len(list) != 4 {
		t.Errorf("refused prunes removed containers: %d left", len(list))
	}
}
