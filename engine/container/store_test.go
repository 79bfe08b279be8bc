package container

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

// clock ticks one second per reading, so that creation order is Created
// order.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t *testing.T, root string) *Store {
	t.Helper()
	s, err := NewStore(root, WithLogger(quiet()), WithClock((&clock{t: t0}).now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close) // before the TempDir's removal: deletions end first
	return s
}

func newStore(t *testing.T) (*Store, string) {
	root := filepath.Join(t.TempDir(), "containers")
	return openStore(t, root), root
}

func newContainer(name string, labels map[string]string) *Container {
	return &Container{
		Name:       name,
		Path:       "sh",
		Args:       []string{"-c", "true"},
		Config:     &containertypes.Config{Image: "busybox", Cmd: []string{"sh", "-c", "true"}, Labels: labels},
		HostConfig: &containertypes.HostConfig{NetworkMode: "bridge"},
		ImageID:    "sha256:1111",
		Image:      "busybox",
	}
}

func mustCreate(t *testing.T, s *Store, c *Container) *Container {
	t.Helper()
	if err := s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustUpdate(t *testing.T, s *Store, id string, fn func(*Container) error) {
	t.Helper()
	if err := s.Update(context.Background(), id, fn); err != nil {
		t.Fatal(err)
	}
}

func setRunning(c *Container) error { return c.State.SetRunning(100, t0) }

func setExited(code int) func(*Container) error {
	return func(c *Container) error {
		if err := c.State.SetRunning(100, t0); err != nil {
			return err
		}
		return c.State.SetExited(ExitInfo{Code: code, FinishedAt: t0.Add(time.Minute)})
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	web := mustCreate(t, s, newContainer("web", nil))
	tests := []struct {
		name     string
		c        *Container
		wantName string
		class    error
		msg      string
	}{
		{"plain name", newContainer("db", nil), "/db", nil, ""},
		{"slash name", newContainer("/cache", nil), "/cache", nil, ""},
		{"taken", newContainer("web", nil), "", errdefs.ErrConflict,
			`Conflict. The container name "/web" is already in use by container "` + web.ID + `". You have to remove (or rename) that container to be able to reuse that name.`},
		{"taken with slash", newContainer("/web", nil), "", errdefs.ErrConflict, ""},
		{"invalid", newContainer("bad name", nil), "", errdefs.ErrInvalidArgument,
			"Invalid container name (bad name), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"},
		{"traversal", newContainer("../../etc", nil), "", errdefs.ErrInvalidArgument, ""},
		{"bad id", &Container{ID: "abc", Name: "x1"}, "", errdefs.ErrInvalidArgument, ""},
		{"not created", &Container{Name: "x2", State: State{Status: StatusRunning}}, "", errdefs.ErrInvalidArgument, ""},
		{"duplicate id", &Container{ID: web.ID, Name: "x3"}, "", errdefs.ErrConflict, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Create(ctx, tt.c)
			if tt.class == nil {
				if err != nil {
					t.Fatal(err)
				}
				if tt.c.Name != tt.wantName || !validID(tt.c.ID) || tt.c.State.Status != StatusCreated || tt.c.Created.IsZero() {
					t.Fatalf("created %+v", tt.c)
				}
				if _, err := os.Stat(filepath.Join(s.Dir(tt.c.ID), recordFile)); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.class) {
				t.Fatalf("err = %v, want %v", err, tt.class)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Fatalf("message %q\nwant    %q", err, tt.msg)
			}
		})
	}
	// Refused creates left nothing behind: neither records nor names.
	all, err := s.List(ctx, ListOptions{All: true})
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d containers, %v; want 3", len(all), err)
	}
	mustCreate(t, s, newContainer("x1", nil))
}

func TestCreateGeneratesNames(t *testing.T) {
	s, _ := newStore(t)
	seen := map[string]bool{}
	for range 100 {
		c := mustCreate(t, s, newContainer("", nil))
		if err := ValidateName(c.Name); err != nil || seen[c.Name] {
			t.Fatalf("generated name %q: %v (seen: %v)", c.Name, err, seen[c.Name])
		}
		seen[c.Name] = true
	}
}

func TestCreateSameNameConcurrently(t *testing.T) {
	s, root := newStore(t)
	const n = 50
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { errs <- s.Create(context.Background(), newContainer("race", nil)) })
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, errdefs.ErrConflict):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want 1", ok)
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 {
		t.Fatalf("%d record directories, want 1", len(ents))
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	id := func(prefix string) string { return prefix + strings.Repeat("0", 64-len(prefix)) }
	a := mustCreate(t, s, &Container{ID: id("abc1"), Name: "alpha"})
	b := mustCreate(t, s, &Container{ID: id("abc2"), Name: "beta"})
	// A name that is also a prefix of another container's ID: the name
	// wins. A name that is another container's full ID: the ID wins.
	c := mustCreate(t, s, &Container{ID: id("def"), Name: "abc1"})
	d := mustCreate(t, s, &Container{ID: id("fed"), Name: a.ID})
	tests := []struct {
		ref   string
		want  string
		class error
		msg   string
	}{
		{a.ID, a.ID, nil, ""},
		{"beta", b.ID, nil, ""},
		{"/beta", b.ID, nil, ""},
		{"abc2", b.ID, nil, ""},
		{"abc1", c.ID, nil, ""},
		{"/abc1", c.ID, nil, ""},
		{"fe", d.ID, nil, ""},
		{"abc", "", errdefs.ErrInvalidArgument, "multiple IDs found with provided prefix: abc"},
		{"nope", "", errdefs.ErrNotFound, "No such container: nope"},
		{"//beta", "", errdefs.ErrNotFound, "No such container: //beta"},
		{"", "", errdefs.ErrInvalidArgument, `invalid name or ID supplied: ""`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := s.Get(ctx, tt.ref)
			if tt.class != nil {
				if !errors.Is(err, tt.class) || err.Error() != tt.msg {
					t.Fatalf("err = %v, want %q (%v)", err, tt.msg, tt.class)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != tt.want {
				t.Fatalf("got %s (%s), want %s", got.ID, got.Name, tt.want)
			}
		})
	}
	// Get hands out copies.
	got, _ := s.Get(ctx, "beta")
	got.State.Status = StatusDead
	if again, _ := s.Get(ctx, "beta"); again.State.Status != StatusCreated {
		t.Fatal("changing a copy changed the store")
	}
}

func TestReload(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	web := mustCreate(t, s, sampleContainer())
	db := mustCreate(t, s, newContainer("db", map[string]string{"a": "b"}))
	gone := mustCreate(t, s, newContainer("gone", nil))
	mustUpdate(t, s, db.ID, setExited(3))
	mustUpdate(t, s, web.ID, setRunning)
	if err := s.Rename(ctx, db.ID, "database"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	before, err := s.List(ctx, ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, root)
	after, err := s2.List(ctx, ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || !reflect.DeepEqual(before, after) {
		t.Fatalf("reloaded records differ:\n%+v\n%+v", before, after)
	}
	if got, err := s2.Get(ctx, "database"); err != nil || got.State.ExitCode != 3 {
		t.Fatalf("Get(database) = %+v, %v", got, err)
	}
	if err := s2.Create(ctx, newContainer("web", nil)); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("name of a reloaded record is free: %v", err)
	}
	mustCreate(t, s2, newContainer("db", nil))
	mustCreate(t, s2, newContainer("gone", nil))
	if len(s2.Skipped()) != 0 {
		t.Fatalf("skipped: %v", s2.Skipped())
	}
	// State and config stay private to the user.
	for _, p := range []string{s.Dir(web.ID), filepath.Join(s.Dir(web.ID), recordFile), root} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", p, fi.Mode())
		}
	}
}

func TestLoadSkipsDamage(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	good := mustCreate(t, s, newContainer("good", nil))
	other := mustCreate(t, s, newContainer("other", nil))
	broken := mustCreate(t, s, newContainer("broken", nil))
	moved := mustCreate(t, s, newContainer("moved", nil))
	odd := mustCreate(t, s, newContainer("odd", nil))

	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(s.Dir(broken.ID), recordFile), `{"ID": "`+broken.ID+`", "Name": `)
	data, _ := os.ReadFile(filepath.Join(s.Dir(moved.ID), recordFile))
	write(filepath.Join(s.Dir(moved.ID), recordFile), strings.ReplaceAll(string(data), moved.ID, good.ID))
	data, _ = os.ReadFile(filepath.Join(s.Dir(odd.ID), recordFile))
	write(filepath.Join(s.Dir(odd.ID), recordFile), strings.Replace(string(data), `"created"`, `"sleeping"`, 1))
	write(filepath.Join(root, "not-an-id", "x"), "x")
	// Leftovers of interrupted writes, deletions and creates are swept.
	write(filepath.Join(s.Dir(good.ID), tmpPrefix+"container.json-1"), "partial")
	write(filepath.Join(root, trashPrefix+other.ID, recordFile), "{}")
	unfinished := NewID()
	write(filepath.Join(s.Dir(unfinished), tmpPrefix+"container.json-2"), "partial")

	s2 := openStore(t, root)
	skipped := s2.Skipped()
	if len(skipped) != 4 {
		t.Fatalf("skipped %d records, want 4: %v", len(skipped), skipped)
	}
	all, err := s2.List(ctx, ListOptions{All: true})
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d, %v; want good and other", len(all), err)
	}
	for _, p := range []string{
		filepath.Join(s.Dir(good.ID), tmpPrefix+"container.json-1"),
		filepath.Join(root, trashPrefix+other.ID),
		s.Dir(unfinished),
	} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not swept: %v", p, err)
		}
	}
	// Damaged records stay for a human to look at.
	if _, err := os.Stat(filepath.Join(s.Dir(broken.ID), recordFile)); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := mustCreate(t, s, newContainer("web", map[string]string{"a": "b"}))
	path := filepath.Join(s.Dir(c.ID), recordFile)
	disk, _ := os.ReadFile(path)
	mem, _ := s.Get(ctx, c.ID)

	boom := errors.New("boom")
	tests := []struct {
		name string
		fn   func(*Container) error
		want error
	}{
		{"fn fails", func(c *Container) error {
			c.Config.Labels["a"] = "changed"
			c.State.Status = StatusDead
			return boom
		}, boom},
		{"refused transition", func(c *Container) error {
			c.RestartCount = 9
			return c.State.SetExited(ExitInfo{})
		}, errdefs.ErrNotModified},
		{"renames", func(c *Container) error { c.Name = "/other"; return nil }, nil},
		{"changes id", func(c *Container) error { c.ID = NewID(); return nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(ctx, c.ID, tt.fn)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, disk) {
				t.Fatalf("record on disk changed:\n%s", now)
			}
			if now, _ := s.Get(ctx, c.ID); !reflect.DeepEqual(now, mem) {
				t.Fatalf("record in memory changed: %+v", now)
			}
		})
	}
	t.Run("write fails", func(t *testing.T) {
		if err := os.RemoveAll(s.Dir(c.ID)); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, c.ID, setRunning); err == nil {
			t.Fatal("Update succeeded without its directory")
		}
		if now, _ := s.Get(ctx, c.ID); !reflect.DeepEqual(now, mem) {
			t.Fatalf("record in memory changed: %+v", now)
		}
	})
	if err := s.Update(ctx, NewID(), setRunning); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Update of unknown container: %v", err)
	}
}

func TestUpdateSerialises(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	c := mustCreate(t, s, newContainer("web", nil))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := s.Update(ctx, c.ID, func(c *Container) error { c.RestartCount++; return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, _ := s.Get(ctx, c.ID); got.RestartCount != 20 {
		t.Fatalf("RestartCount = %d, want 20", got.RestartCount)
	}
	if got, _ := openStore(t, root).Get(ctx, c.ID); got.RestartCount != 20 {
		t.Fatalf("on disk RestartCount = %d, want 20", got.RestartCount)
	}
}

func TestLockHonoursContext(t *testing.T) {
	s, _ := newStore(t)
	c := mustCreate(t, s, newContainer("web", nil))
	holding, done, finished := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		finished <- s.Update(context.Background(), c.ID, func(*Container) error {
			close(holding)
			<-done
			return nil
		})
	}()
	<-holding
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, op := range map[string]func() error{
		"update": func() error { return s.Update(ctx, c.ID, setRunning) },
		"delete": func() error { return s.Delete(ctx, c.ID) },
		"rename": func() error { return s.Rename(ctx, c.ID, "other") },
	} {
		if err := op(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s while locked: %v, want context.Canceled", name, err)
		}
	}
	close(done)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	run := mustCreate(t, s, newContainer("run", nil))
	mustUpdate(t, s, run.ID, setRunning)
	err := s.Delete(ctx, run.ID)
	if !errors.Is(err, errdefs.ErrConflict) ||
		err.Error() != `cannot remove container "/run": container is running: stop the container before removing or force remove` {
		t.Fatalf("Delete(running) = %v", err)
	}

	c := mustCreate(t, s, newContainer("web", nil))
	if err := os.WriteFile(filepath.Join(s.Dir(c.ID), "log.json"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir(c.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record directory left: %v", err)
	}
	if _, err := s.Get(ctx, c.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, c.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	mustCreate(t, s, newContainer("web", nil))
	s.Close() // the deleted record's directory is removed in the background
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Fatalf("%d entries in root, want 2", len(ents))
	}
}

func TestRename(t *testing.T) {
	ctx := context.Background()
	s, root := newStore(t)
	// Names that cannot be the prefix of a (hex) ID: Get resolves both.
	a := mustCreate(t, s, newContainer("x1", nil))
	b := mustCreate(t, s, newContainer("b1", nil))
	tests := []struct {
		name  string
		to    string
		class error
		msg   string
	}{
		{"empty", " ", errdefs.ErrInvalidArgument, "Neither old nor new names may be empty"},
		{"slash only", "/", errdefs.ErrInvalidArgument, "Neither old nor new names may be empty"},
		{"same", "x1", errdefs.ErrInvalidArgument, "Renaming a container with the same name as its current name"},
		{"invalid", "b@d", errdefs.ErrInvalidArgument,
			"Error when allocating new name: Invalid container name (/b@d), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"},
		{"taken", "/b1", errdefs.ErrConflict,
			`Error when allocating new name: Conflict. The container name "/b1" is already in use by container "` + b.ID + `". You have to remove (or rename) that container to be able to reuse that name.`},
		{"ok", "alpha", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Rename(ctx, a.ID, tt.to)
			if tt.class == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.class) || err.Error() != tt.msg {
				t.Fatalf("err = %v\nwant %q", err, tt.msg)
			}
		})
	}
	if got, err := s.Get(ctx, "alpha"); err != nil || got.ID != a.ID || got.Name != "/alpha" {
		t.Fatalf("Get(alpha) = %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, "x1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("old name still resolves: %v", err)
	}
	mustCreate(t, s, newContainer("x1", nil))
	if got, _ := openStore(t, root).Get(ctx, a.ID); got.Name != "/alpha" {
		t.Fatalf("name on disk: %s", got.Name)
	}
}
