package storage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/sys/mountinfo"
)

func TestRootfsLifecycle(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	s := newStore(t, "")
	if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	id, cfg, err := s.ContainerImage(ctx, ref)
	if err != nil || !strings.HasPrefix(id, "sha256:") || !slices.Equal(cfg.Config.Cmd, []string{"sh"}) {
		t.Fatalf("ContainerImage = %s, %+v, %v", id, cfg, err)
	}
	if _, _, err := s.ContainerImage(ctx, "nothere"); !errdefs.IsNotFound(err) {
		t.Errorf("ContainerImage(nothere) = %v", err)
	}

	cid := strings.Repeat("c", 64)
	rootfs, err := s.CreateRootfs(ctx, cid, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRootfs(ctx, cid, id, false); !errdefs.IsConflict(err) {
		t.Errorf("second CreateRootfs = %v", err)
	}
	if _, err := s.CreateRootfs(ctx, strings.Repeat("d", 64), "sha256:"+strings.Repeat("0", 64), true); !errdefs.IsNotFound(err) {
		t.Errorf("CreateRootfs of a missing image = %v", err)
	}
	path, err := s.MountRootfs(ctx, rootfs)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.MountRootfs(ctx, rootfs); err != nil || again != path {
		t.Errorf("nested mount = %q, %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(path, "bin/busybox")); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(path, "tmp/written"), []byte("x"), 0o644); err != nil {
		t.Errorf("rootfs is not writable: %v", err)
	}
	if err := s.UnmountRootfs(ctx, rootfs); err != nil {
		t.Error(err)
	}
	if _, err := s.DeleteImage(ctx, id); !errdefs.IsConflict(err) {
		t.Errorf("DeleteImage of an image in use = %v", err)
	}
	if err := s.RemoveRootfs(ctx, rootfs); err != nil { // still mounted once
		t.Fatal(err)
	}
	// The driver keeps its home bind-mounted while the store is open; no
	// layer may stay mounted below it.
	home := filepath.Join(s.GraphRoot(), "overlay") + "/"
	below, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !strings.HasPrefix(m.Mountpoint, home), false
	})
	if err != nil || len(below) != 0 {
		t.Errorf("layers still mounted: %v, %v", below, err)
	}
	if err := s.RemoveRootfs(ctx, rootfs); !errdefs.IsNotFound(err) {
		t.Errorf("second RemoveRootfs = %v", err)
	}
	if _, err := s.DeleteImage(ctx, id); err != nil {
		t.Errorf("DeleteImage after the container: %v", err)
	}
	assertEmpty(t, s)
}
