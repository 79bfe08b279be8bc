package engine

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

func TestCommitConfig(t *testing.T) {
	ctr := &containertypes.Config{
		User:         "u",
		Env:          []string{"PATH=/bin", "A=1"},
		Cmd:          []string{"sh", "-c", "echo hi > /file"},
		WorkingDir:   "/w",
		Labels:       map[string]string{"l": "1"},
		Volumes:      map[string]struct{}{"/v": {}},
		StopSignal:   "SIGUSR1",
		ExposedPorts: network.PortSet{network.MustParsePort("80/tcp"): {}},
		Healthcheck:  &containertypes.HealthConfig{Test: []string{"CMD", "true"}, Retries: 3},
		Hostname:     "not-in-an-image",
	}
	tests := []struct {
		name    string
		body    *containertypes.Config
		changes []string
		check   func(t *testing.T, c dockerspec.DockerOCIImageConfig)
		wantErr bool
	}{
		{name: "the container's config", check: func(t *testing.T, c dockerspec.DockerOCIImageConfig) {
			if c.User != "u" || !slices.Equal(c.Cmd, ctr.Cmd) || c.WorkingDir != "/w" || c.StopSignal != "SIGUSR1" ||
				c.Labels["l"] != "1" || len(c.Volumes) != 1 || len(c.ExposedPorts) != 1 || c.Healthcheck.Retries != 3 {
				t.Errorf("config = %+v", c)
			}
			if _, ok := c.ExposedPorts["80/tcp"]; !ok {
				t.Errorf("ExposedPorts = %v, want 80/tcp", c.ExposedPorts)
			}
		}},
		{name: "changes on top", changes: []string{`CMD ["echo","hi"]`, "ENV A=b C=d", "EXPOSE 53/udp", "LABEL m=2\nUSER root"}, check: func(t *testing.T, c dockerspec.DockerOCIImageConfig) {
			if !slices.Equal(c.Cmd, []string{"echo", "hi"}) || !slices.Equal(c.Env, []string{"PATH=/bin", "A=b", "C=d"}) || c.User != "root" {
				t.Errorf("config = %+v", c)
			}
			if want := map[string]string{"l": "1", "m": "2"}; !maps.Equal(c.Labels, want) {
				t.Errorf("labels = %v, want %v", c.Labels, want)
			}
			if len(c.ExposedPorts) != 2 {
				t.Errorf("ExposedPorts = %v", c.ExposedPorts)
			}
		}},
		{name: "an entrypoint drops the container's command", changes: []string{`ENTRYPOINT ["/bin/true"]`}, check: func(t *testing.T, c dockerspec.DockerOCIImageConfig) {
			if !slices.Equal(c.Entrypoint, []string{"/bin/true"}) || c.Cmd != nil {
				t.Errorf("Entrypoint %q Cmd %q", c.Entrypoint, c.Cmd)
			}
		}},
		{name: "a body config, the rest from the container", body: &containertypes.Config{Cmd: []string{"top"}, Env: []string{"A=2"}, Labels: map[string]string{"l": "x"}},
			check: func(t *testing.T, c dockerspec.DockerOCIImageConfig) {
				if !slices.Equal(c.Cmd, []string{"top"}) || !slices.Equal(c.Env, []string{"A=2", "PATH=/bin"}) || c.Labels["l"] != "x" || c.User != "u" || c.WorkingDir != "/w" {
					t.Errorf("config = %+v", c)
				}
			}},
		{name: "a body healthcheck inherits what it leaves out", body: &containertypes.Config{Healthcheck: &containertypes.HealthConfig{Interval: time.Second}},
			check: func(t *testing.T, c dockerspec.DockerOCIImageConfig) {
				if h := c.Healthcheck; h == nil || h.Interval != time.Second || h.Retries != 3 || !slices.Equal(h.Test, []string{"CMD", "true"}) {
					t.Errorf("healthcheck = %+v", h)
				}
			}},
		{name: "bad instruction", changes: []string{"RUN make"}, wantErr: true},
		{name: "bad argument", changes: []string{"EXPOSE nope"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := *ctr
			got, err := commitConfig(tc.body, tc.changes, ctr)
			if tc.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
			if !slices.Equal(ctr.Env, before.Env) || !maps.Equal(ctr.Labels, before.Labels) {
				t.Errorf("the container's config changed: %+v", ctr)
			}
		})
	}
}

func TestRuntimeArtifacts(t *testing.T) {
	add := func(p string) containertypes.FilesystemChange {
		return containertypes.FilesystemChange{Path: p, Kind: containertypes.ChangeAdd}
	}
	mod := func(p string) containertypes.FilesystemChange {
		return containertypes.FilesystemChange{Path: p, Kind: containertypes.ChangeModify}
	}
	del := func(p string) containertypes.FilesystemChange {
		return containertypes.FilesystemChange{Path: p, Kind: containertypes.ChangeDelete}
	}
	tests := []struct {
		name    string
		changes []containertypes.FilesystemChange
		want    []string
	}{
		{"nothing", nil, nil},
		{"mount points and the directory made for them", []containertypes.FilesystemChange{add("/dev"), mod("/etc"), add("/etc/hostname"), add("/etc/hosts"), add("/etc/resolv.conf"), add("/file"), add("/proc"), add("/sys")},
			[]string{"/dev", "/etc", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/proc", "/sys"}},
		{"a directory with other changes stays", []containertypes.FilesystemChange{mod("/etc"), add("/etc/hosts"), add("/etc/motd")}, []string{"/etc/hosts"}},
		{"an added directory holding only mount points goes", []containertypes.FilesystemChange{add("/sbin"), add("/sbin/docker-init")}, []string{"/sbin", "/sbin/docker-init"}},
		{"a modified mount point is the container's", []containertypes.FilesystemChange{mod("/etc"), mod("/etc/hosts")}, nil},
		{"a deletion is the container's", []containertypes.FilesystemChange{mod("/etc"), del("/etc/hosts")}, nil},
		{"nested directories", []containertypes.FilesystemChange{add("/etc"), add("/etc/hosts"), mod("/x"), add("/x/y"), add("/x/y/z")}, []string{"/etc", "/etc/hosts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(runtimeArtifacts(tc.changes)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("dropped %q, want %q", got, tc.want)
			}
		})
	}
}

// commitStore is an image store for commit: one source image,
// the rootfs's changes, and what was asked of it.
type commitStore struct {
	*imagestoretest.Fake
	base    *dockerspec.DockerOCIImage
	changes []containertypes.FilesystemChange
	rootfs  string
	got     *imagestore.CommitImage
}

func (s *commitStore) ContainerImage(_ context.Context, ref string) (string, *dockerspec.DockerOCIImage, error) {
	if ref != "sha256:base" {
		return "", nil, errdefs.ErrNotFound.WithMessage("No such image: " + ref)
	}
	return ref, s.base, nil
}

func (s *commitStore) RootfsChanges(_ context.Context, rootfsID string) ([]containertypes.FilesystemChange, error) {
	return s.changes, nil
}

func (s *commitStore) CommitImage(_ context.Context, rootfsID string, img imagestore.CommitImage) (string, error) {
	s.rootfs, s.got = rootfsID, &img
	return "sha256:new", nil
}

// commitEngine is an Engine over a commitStore, with one stopped and one
// running container made from the source image.
func commitEngine(t *testing.T) (*Engine, *commitStore, *container.Container, *container.Container) {
	t.Helper()
	cs, err := container.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	base := &dockerspec.DockerOCIImage{Image: ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: "arm64"},
		History:  []ocispec.History{{Created: &created, CreatedBy: "base"}},
	}}
	store := &commitStore{Fake: imagestoretest.New(), base: base, changes: []containertypes.FilesystemChange{
		{Path: "/etc", Kind: containertypes.ChangeModify}, {Path: "/etc/hosts", Kind: containertypes.ChangeAdd},
		{Path: "/file", Kind: containertypes.ChangeAdd},
	}}
	ctx := context.Background()
	var made []*container.Container
	for _, name := range []string{"stopped", "running"} {
		c := &container.Container{Name: name, ImageID: "sha256:base", Config: &containertypes.Config{Cmd: []string{"sh", "-c", "echo hi > /file"}},
			Runtime: container.Runtime{RootfsID: "rootfs-" + name}}
		if err := cs.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		made = append(made, c)
	}
	if err := cs.Update(ctx, made[1].ID, func(c *container.Container) error { return c.State.SetRunning(1, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	return &Engine{images: store, containers: cs, runs: newRuns(), log: slog.New(slog.DiscardHandler)}, store, made[0], made[1]
}

func TestContainerCommit(t *testing.T) {
	ctx := context.Background()
	e, store, stopped, running := commitEngine(t)

	id, err := e.ContainerCommit(ctx, CommitRequest{Container: stopped.ID[:12], Repo: "mine/img", Comment: "saved", Author: "me <me@x>", Changes: []string{"ENV A=b"}})
	if err != nil || id != "sha256:new" {
		t.Fatalf("commit = %q, %v", id, err)
	}
	got := store.got
	if store.rootfs != "rootfs-stopped" || got.Name != "docker.io/mine/img:latest" || got.Parent != "sha256:base" || got.Comment != "saved" {
		t.Errorf("commit of %s: %+v", store.rootfs, got)
	}
	if h := got.History; h.Comment != "saved" || h.Author != "me <me@x>" || h.CreatedBy != "sh -c echo hi > /file" || h.Created == nil || h.EmptyLayer {
		t.Errorf("history entry = %+v", h)
	}
	if img := got.Image; img.Author != "me <me@x>" || img.Created == nil || !img.Created.Equal(*got.History.Created) || img.Architecture != "arm64" ||
		len(img.History) != 1 || !slices.Equal(img.Config.Env, []string{"A=b"}) {
		t.Errorf("image = %+v", img)
	}
	if got.Container != stopped.ID || got.ContainerConfig == nil || !slices.Equal(got.ContainerConfig.Cmd, stopped.Config.Cmd) {
		t.Errorf("Container %q, ContainerConfig %+v: want the source container's", got.Container, got.ContainerConfig)
	}
	if want := map[string]bool{"/etc": true, "/etc/hosts": true}; !maps.Equal(got.Exclude, want) {
		t.Errorf("Exclude = %v, want %v", got.Exclude, want)
	}

	// A running container on a host without a freezer is committed anyway.
	if _, err := e.ContainerCommit(ctx, CommitRequest{Container: "running", Pause: true}); err != nil || store.rootfs != "rootfs-running" || store.got.Name != "" {
		t.Errorf("commit of a running container: %v, %+v", err, store.got)
	}
	if c, _ := e.containers.Get(ctx, running.ID); c.State.Status != container.StatusRunning {
		t.Errorf("state after commit = %s", c.State.Status)
	}

	for _, tc := range []struct {
		name  string
		req   CommitRequest
		class error
	}{
		{"missing container", CommitRequest{Container: "nope"}, errdefs.ErrNotFound},
		{"bad repo", CommitRequest{Container: "stopped", Repo: "UPPER"}, errdefs.ErrInvalidArgument},
		{"bad tag", CommitRequest{Container: "stopped", Repo: "x", Tag: "a:b"}, errdefs.ErrInvalidArgument},
		{"digest repo", CommitRequest{Container: "stopped", Repo: "x@sha256:" + strings.Repeat("a", 64)}, errdefs.ErrInvalidArgument},
		{"bad change", CommitRequest{Container: "stopped", Changes: []string{"FROM x"}}, errdefs.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store.got = nil
			if _, err := e.ContainerCommit(ctx, tc.req); !errors.Is(err, tc.class) {
				t.Errorf("err = %v, want %v", err, tc.class)
			}
			if store.got != nil {
				t.Error("the store committed anyway")
			}
		})
	}
}

func TestContainerChanges(t *testing.T) {
	e, _, stopped, _ := commitEngine(t)
	got, err := e.ContainerChanges(context.Background(), stopped.Name)
	if err != nil || len(got) != 1 || got[0].Path != "/file" || got[0].Kind != containertypes.ChangeAdd {
		t.Errorf("changes = %+v, %v", got, err)
	}
	if _, err := e.ContainerChanges(context.Background(), "nope"); !errdefs.IsNotFound(err) {
		t.Errorf("changes of a missing container: %v", err)
	}
}
