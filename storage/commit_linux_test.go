package storage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	mobyregistry "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// commitBase imports the rootfs of rootfsTar as an image with one history
// entry and makes a rootfs on it.
func commitBase(t *testing.T, s *Store, rootfsID string) (imageID string) {
	t.Helper()
	ctx := context.Background()
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := imagestore.ImportConfig{Image: dockerspec.DockerOCIImage{Image: ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
		History:  []ocispec.History{{Created: &created, CreatedBy: "import"}},
	}}}
	cfg.Image.Config.Cmd = []string{"/bin/busybox", "true"}
	id, err := s.ImportImage(ctx, bytes.NewReader(rootfsTar(t, false)), cfg, "docker.io/library/base:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRootfs(ctx, rootfsID, id, false); err != nil {
		t.Fatal(err)
	}
	return id
}

// inRootfs mounts the rootfs, calls f with its path, and unmounts it.
func inRootfs(t *testing.T, s *Store, rootfsID string, f func(root string)) {
	t.Helper()
	root, err := s.MountRootfs(context.Background(), rootfsID)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.UnmountRootfs(context.Background(), rootfsID); err != nil {
			t.Error(err)
		}
	}()
	f(root)
}

// commitReq is a commit of the base image's config with a comment.
func commitReq(t *testing.T, s *Store, base, comment, name string, exclude ...string) imagestore.CommitImage {
	t.Helper()
	cfg, err := s.ImageConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	req := imagestore.CommitImage{Image: *cfg, Comment: comment, Name: name, Parent: base, Exclude: map[string]bool{},
		History: ocispec.History{Created: &now, Comment: comment, CreatedBy: "sh"}}
	req.Image.Created = &now
	req.Image.Config.Cmd = []string{"/bin/busybox", "cat", "/new.txt"}
	for _, p := range exclude {
		req.Exclude[p] = true
	}
	return req
}

func TestCommitImage(t *testing.T) {
	s := newStore(t, "")
	ctx := context.Background()
	rootfs := strings.Repeat("a", 64)
	base := commitBase(t, s, rootfs)
	inRootfs(t, s, rootfs, func(root string) {
		for name, body := range map[string]string{"new.txt": "new\n", "etc/hosts": ""} {
			if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(filepath.Join(root, "etc/hello")); err != nil {
			t.Fatal(err)
		}
	})

	changes, err := s.RootfsChanges(ctx, rootfs)
	if err != nil {
		t.Fatal(err)
	}
	want := []containertypes.FilesystemChange{
		{Path: "/etc", Kind: containertypes.ChangeModify},
		{Path: "/etc/hello", Kind: containertypes.ChangeDelete},
		{Path: "/etc/hosts", Kind: containertypes.ChangeAdd},
		{Path: "/new.txt", Kind: containertypes.ChangeAdd},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("changes = %+v, want %+v", changes, want)
	}

	req := commitReq(t, s, base, "first", "docker.io/library/committed:1", "/etc/hosts")
	req.Container, req.ContainerConfig = "ctr1", &containertypes.Config{Volumes: map[string]struct{}{"/data": {}}}
	id, err := s.CommitImage(ctx, rootfs, req)
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.LookupImage(ctx, "committed:1")
	if err != nil || img.ID != id {
		t.Fatalf("LookupImage = %+v, %v (commit said %s)", img, err, id)
	}
	baseImg, _ := s.LookupImage(ctx, base)
	cfg := img.Config
	if img.Parent != base || img.Comment != "first" || len(img.Layers) != 2 || img.Layers[0].ID != baseImg.Layers[0].ID || img.LastTagTime.IsZero() {
		t.Errorf("committed image = %+v", img)
	}
	if _, ok := img.ContainerConfig.Volumes["/data"]; img.Container != "ctr1" || !ok {
		t.Errorf("container %q, container_config %+v: want the source container's", img.Container, img.ContainerConfig)
	}
	if cfg == nil || len(cfg.RootFS.DiffIDs) != 2 || cfg.RootFS.DiffIDs[1] != img.Layers[1].DiffID || len(cfg.History) != 2 ||
		cfg.History[1].Comment != "first" || cfg.History[1].EmptyLayer || strings.Join(cfg.Config.Cmd, " ") != "/bin/busybox cat /new.txt" {
		t.Errorf("committed config = %+v", cfg)
	}
	checkRootfsFile(t, s, id, "new.txt")
	root, err := s.Backend().MountImage(storedHex(t, s, id), []string{"ro"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"etc/hello", "etc/hosts"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s in the committed image: %v", gone, err)
		}
	}
	s.Backend().UnmountImage(storedHex(t, s, id), true)

	// Committing again gives another image on the same layer.
	again, err := s.CommitImage(ctx, rootfs, commitReq(t, s, base, "second", "", "/etc/hosts"))
	if err != nil || again == id {
		t.Fatalf("second commit = %s, %v (first %s)", again, err, id)
	}
	if img2, _ := s.LookupImage(ctx, again); img2 == nil || len(img2.Layers) != 2 || img2.Layers[1].ID != img.Layers[1].ID || len(img2.Refs) != 0 {
		t.Errorf("second commit = %+v", img2)
	}

	// A rootfs without changes adds no layer, only an empty history entry.
	clean := strings.Repeat("b", 64)
	if _, err := s.CreateRootfs(ctx, clean, base, false); err != nil {
		t.Fatal(err)
	}
	emptyID, err := s.CommitImage(ctx, clean, commitReq(t, s, base, "nothing", ""))
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := s.LookupImage(ctx, emptyID); e == nil || len(e.Layers) != 1 || len(e.Config.History) != 2 || !e.Config.History[1].EmptyLayer || len(e.Config.RootFS.DiffIDs) != 1 {
		t.Errorf("empty commit = %+v", e)
	}

	if _, err := s.CommitImage(ctx, strings.Repeat("c", 64), commitReq(t, s, base, "", "")); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("commit of a missing rootfs: %v", err)
	}
	if _, err := s.CommitImage(ctx, rootfs, commitReq(t, s, base, "", "docker.io/library/UPPER:1")); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("commit with a bad name: %v", err)
	}
}

func TestPushImage(t *testing.T) {
	reg := newRegistry(t, "hutch", "s3cret")
	s := newStore(t, "")
	loopbackOnly(s)
	ctx := context.Background()
	rootfs := strings.Repeat("a", 64)
	base := commitBase(t, s, rootfs)
	inRootfs(t, s, rootfs, func(root string) {
		if err := os.WriteFile(filepath.Join(root, "new.txt"), []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	id, err := s.CommitImage(ctx, rootfs, commitReq(t, s, base, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	name := reg.host + "/pushed:v1"
	auth := mobyregistry.AuthConfig{Username: "hutch", Password: "s3cret"}
	push := func(auth mobyregistry.AuthConfig) ([]string, error) {
		var lines []string
		err := s.PushImage(ctx, id, name, auth, func(m jsonstream.Message) {
			if m.Status != "" && m.Status != "Pushing" {
				lines = append(lines, line(m))
			}
		})
		return lines, err
	}

	if _, err := push(mobyregistry.AuthConfig{Username: "hutch", Password: "wrong"}); !errors.Is(err, ErrUnauthorized) ||
		err.Error() != "unauthorized: authentication required: "+reg.host+" rejected the credentials (docker login "+reg.host+")" {
		t.Errorf("push with a wrong password: %v", err)
	}
	if _, err := push(mobyregistry.AuthConfig{}); !errors.Is(err, ErrUnauthorized) ||
		err.Error() != "unauthorized: authentication required to push to "+reg.host+" (docker login "+reg.host+")" {
		t.Errorf("push without credentials: %v", err)
	}
	lines, err := push(auth)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := s.LookupImage(ctx, id)
	top, bottom := shortID(img.Layers[1].DiffID), shortID(img.Layers[0].DiffID)
	if len(lines) != 5 || lines[0] != top+": Preparing" || lines[1] != bottom+": Preparing" ||
		!slices.Contains(lines, top+": Pushed") || !slices.Contains(lines, bottom+": Pushed") || !strings.HasPrefix(lines[4], "v1: digest: sha256:") {
		t.Errorf("push stream:\n%s", strings.Join(lines, "\n"))
	}
	// The push is recorded as a digest reference, as Docker records it.
	if rec, _ := s.Image(id); rec == nil || len(rec.RepoDigests) != 1 || !strings.HasPrefix(rec.RepoDigests[0], reg.host+"/pushed@sha256:") {
		t.Errorf("RepoDigests after push: %+v", rec)
	}

	lines, err = push(auth)
	if err != nil || !slices.Contains(lines, top+": Layer already exists") || !slices.Contains(lines, bottom+": Layer already exists") {
		t.Errorf("second push: %v\n%s", err, strings.Join(lines, "\n"))
	}

	// What was pushed pulls into another store with the committed file.
	other := newStore(t, "")
	loopbackOnly(other)
	pulled, err := other.Pull(ctx, name, PullOptions{Auth: auth}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pulled.ID != id {
		t.Errorf("pulled %s, pushed %s", pulled.ID, id)
	}
	checkRootfsFile(t, other, pulled.ID, "new.txt")
}
