package container

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	finished := t0.Add(time.Hour)

	type probeAnswer struct {
		alive bool
		exit  *ExitInfo
	}
	cases := []struct {
		name      string
		setup     func(*Container) error
		probe     *probeAnswer // nil: must not be probed
		removeErr error        // for removals
		check     func(t *testing.T, c *Container, err error)
	}{
		{"alive", setRunning, &probeAnswer{alive: true}, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusRunning || c.State.Pid != 100 {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"recorded", setRunning, &probeAnswer{exit: &ExitInfo{Code: 0, FinishedAt: finished}}, nil, func(t *testing.T, c *Container, err error) {
			want := State{Status: StatusExited, StartedAt: t0, FinishedAt: finished}
			if err != nil || !reflect.DeepEqual(c.State, want) {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"oom while paused", func(c *Container) error {
			if err := setRunning(c); err != nil {
				return err
			}
			return c.State.SetPaused(c.ID)
		}, &probeAnswer{exit: &ExitInfo{Code: 137, OOMKilled: true, FinishedAt: finished}}, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusExited || c.State.ExitCode != 137 || !c.State.OOMKilled {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"lost", setRunning, &probeAnswer{}, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusExited || c.State.ExitCode != LostExitCode ||
				c.State.Error != LostError || c.State.FinishedAt.IsZero() || c.State.Pid != 0 {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"restarting", func(c *Container) error {
			if err := setRunning(c); err != nil {
				return err
			}
			return c.State.SetRestarting(ExitInfo{Code: 1})
		}, &probeAnswer{}, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusExited || c.State.ExitCode != LostExitCode {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"created", nil, nil, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusCreated {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"exited", setExited(2), nil, nil, func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusExited || c.State.ExitCode != 2 {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"removal finished", removingAfter(setExited(0)), nil, nil, func(t *testing.T, c *Container, err error) {
			if !errors.Is(err, errdefs.ErrNotFound) {
				t.Fatalf("still there: %+v, %v", c, err)
			}
		}},
		{"removal failed", removingAfter(setExited(0)), nil, errors.New("busy"), func(t *testing.T, c *Container, err error) {
			if err != nil || c.State.Status != StatusDead || c.State.Removing || c.State.Error != "removal failed: busy" {
				t.Fatalf("%+v, %v", c.State, err)
			}
		}},
		{"removal of live container failed", removingAfter(setRunning), &probeAnswer{alive: true}, errors.New("busy"),
			func(t *testing.T, c *Container, err error) {
				if err != nil || c.State.Status != StatusRunning || c.State.Removing {
					t.Fatalf("%+v, %v", c.State, err)
				}
			}},
		{"removal of stopped container", removingAfter(setRunning), &probeAnswer{exit: &ExitInfo{Code: 143}}, nil,
			func(t *testing.T, c *Container, err error) {
				if !errors.Is(err, errdefs.ErrNotFound) {
					t.Fatalf("still there: %+v, %v", c, err)
				}
			}},
	}

	ids := map[string]string{} // name → id
	byID := map[string]int{}   // id → case
	for i, tc := range cases {
		c := mustCreate(t, s, newContainer(strings.ReplaceAll(tc.name, " ", "-"), nil))
		if tc.setup != nil {
			mustUpdate(t, s, c.ID, tc.setup)
		}
		ids[tc.name], byID[c.ID] = c.ID, i
	}

	// The daemon restarts.
	s = openStore(t, root)
	probed, removed := map[string]bool{}, map[string]bool{}
	probe := func(_ context.Context, c *Container) (bool, *ExitInfo) {
		tc := cases[byID[c.ID]]
		if tc.probe == nil {
			t.Errorf("%s probed", tc.name)
			return true, nil
		}
		probed[c.ID] = true
		c.Name = "/scribbled" // a copy: changes nothing
		return tc.probe.alive, tc.probe.exit
	}
	remove := func(_ context.Context, c *Container) error {
		removed[c.ID] = true
		return cases[byID[c.ID]].removeErr
	}
	rep, err := s.Reconcile(ctx, probe, remove)
	if err != nil {
		t.Fatal(err)
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := ids[tc.name]
			if tc.probe != nil && !probed[id] {
				t.Error("not probed")
			}
			if wantRemove := strings.HasPrefix(tc.name, "removal"); removed[id] != wantRemove {
				t.Errorf("remove called: %v", removed[id])
			}
			c, err := s.Get(ctx, id)
			if err == nil && c.Name != "/"+strings.ReplaceAll(cases[i].name, " ", "-") {
				t.Errorf("name changed to %s", c.Name)
			}
			if c == nil {
				c = &Container{}
			}
			tc.check(t, c, err)
			// What Reconcile decided is on disk.
			again, err2 := openStore(t, root).Get(ctx, id)
			if err == nil && (err2 != nil || !reflect.DeepEqual(again, c)) {
				t.Errorf("on disk: %+v, %v", again, err2)
			}
			if err != nil && !errors.Is(err2, errdefs.ErrNotFound) {
				t.Errorf("removed record still on disk: %v", err2)
			}
		})
	}

	want := ReconcileReport{
		Exited:  idsOf(ids, "recorded", "oom while paused", "lost", "restarting", "removal of stopped container"),
		Lost:    idsOf(ids, "lost", "restarting"),
		Removed: idsOf(ids, "removal finished", "removal of stopped container"),
		Dead:    idsOf(ids, "removal failed"),
	}
	for _, l := range [][]string{rep.Exited, rep.Lost, rep.Removed, rep.Dead} {
		slices.Sort(l)
	}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("report %+v\nwant   %+v", rep, want)
	}
	// Names of removed containers are free again.
	mustCreate(t, s, newContainer("removal-finished", nil))
}

func removingAfter(fn func(*Container) error) func(*Container) error {
	return func(c *Container) error {
		if err := fn(c); err != nil {
			return err
		}
		return c.State.SetRemoving(c.Name, true)
	}
}

func idsOf(ids map[string]string, names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, ids[n])
	}
	slices.Sort(out)
	return out
}

func TestReconcileWithoutRemover(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := mustCreate(t, s, newContainer("web", nil))
	mustUpdate(t, s, c.ID, removingAfter(setExited(0)))
	rep, err := s.Reconcile(ctx, func(context.Context, *Container) (bool, *ExitInfo) { return true, nil }, nil)
	if err != nil || !reflect.DeepEqual(rep.Dead, []string{c.ID}) {
		t.Fatalf("report %+v, %v", rep, err)
	}
	got, _ := s.Get(ctx, c.ID)
	if got.State.Effective() != StatusDead || got.State.Error != "removal failed: removal interrupted" {
		t.Fatalf("state %+v", got.State)
	}
}

func TestReconcileGoesOnAfterErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	broken := mustCreate(t, s, newContainer("broken", nil))
	fine := mustCreate(t, s, newContainer("fine", nil))
	mustUpdate(t, s, broken.ID, setRunning)
	mustUpdate(t, s, fine.ID, setRunning)
	// The broken record cannot be written any more.
	if err := os.RemoveAll(s.Dir(broken.ID)); err != nil {
		t.Fatal(err)
	}
	dead := func(context.Context, *Container) (bool, *ExitInfo) { return false, &ExitInfo{Code: 1} }
	rep, err := s.Reconcile(ctx, dead, nil)
	if err == nil || !strings.Contains(err.Error(), broken.ID) {
		t.Fatalf("err = %v, want one naming %s", err, broken.ID)
	}
	if !reflect.DeepEqual(rep.Exited, []string{fine.ID}) {
		t.Fatalf("report %+v", rep)
	}
	if got, _ := s.Get(ctx, fine.ID); got.State.Status != StatusExited {
		t.Fatalf("fine container: %+v", got.State)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Reconcile(cancelled, dead, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Reconcile: %v", err)
	}
}
