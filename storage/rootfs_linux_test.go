package storage

import (
	"context"
	"errors"
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
	ref := pushedBusybox(t)
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

// TestRootfsOwnMounts: the store mounts writable layers of the native
// overlay driver itself, with the options containers/storage's driver
// would use, resets them for reuse, and unmounts a layer it did not count
// (mounted by a daemon before it).
func TestRootfsOwnMounts(t *testing.T) {
	ctx := context.Background()
	ref := pushedBusybox(t)
	s := newStore(t, DriverOverlay)
	if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	image, _, err := s.ContainerImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	create := func(volatile bool) (string, string) {
		t.Helper()
		id, err := s.CreateRootfs(ctx, "", image, volatile)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Backend().Container(id)
		if err != nil {
			t.Fatal(err)
		}
		return id, c.LayerID
	}
	// options gives the overlay's mount options at p, the layer's ID
	// replaced.
	options := func(p, layer string) string {
		t.Helper()
		ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(p))
		if err != nil || len(ms) != 1 {
			t.Fatalf("mounts at %s: %v, %v", p, ms, err)
		}
		return strings.ReplaceAll(ms[0].Options+" "+ms[0].VFSOptions, layer, "LAYER")
	}
	for _, volatile := range []bool{false, true} {
		own, ownLayer := create(volatile)
		cs, csLayer := create(volatile)
		p, err := s.MountRootfs(ctx, own)
		if err != nil {
			t.Fatal(err)
		}
		q, err := s.Backend().Mount(cs, "")
		if err != nil {
			t.Fatal(err)
		}
		// Ours has the image's init layer on top of the image's layers.
		top, err := s.Backend().Layer(ownLayer)
		if err != nil {
			t.Fatal(err)
		}
		init := "lowerdir=" + filepath.Join(s.GraphRoot(), initLayersDir, top.Parent) + ":"
		a, b := options(p, ownLayer), options(q, csLayer)
		if !strings.Contains(a, init) {
			t.Errorf("volatile %v: mounted with %q, without the init layer", volatile, a)
		}
		if a = strings.Replace(a, init, "lowerdir=", 1); a != b {
			t.Errorf("volatile %v: mounted with %q, containers/storage mounts with %q", volatile, a, b)
		}
		if n, err := s.Backend().Mounted(ownLayer); err != nil || n != 0 {
			t.Errorf("containers/storage counts our mount: %d, %v", n, err)
		}
		if err := os.WriteFile(filepath.Join(p, "written"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A docker run --rm container's layer is reset still mounted.
		if err := s.ResetRootfs(ctx, own); err != nil {
			t.Fatal(err)
		}
		if mounted, err := mountinfo.Mounted(p); err != nil || mounted {
			t.Errorf("%s still mounted (%v) after ResetRootfs", p, err)
		}
		if p, err = s.MountRootfs(ctx, own); err != nil {
			t.Fatalf("mount after a reset: %v", err)
		}
		if _, err := os.Stat(filepath.Join(p, "written")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a reset layer still has what was written: %v", err)
		}
		if err := s.UnmountRootfs(ctx, own); err != nil {
			t.Fatal(err)
		}
		// cs stands for a layer a daemon before this store mounted.
		if err := s.UnmountRootfs(ctx, cs); err != nil {
			t.Fatal(err)
		}
		if mounted, err := mountinfo.Mounted(q); err != nil || mounted {
			t.Errorf("%s still mounted (%v) after UnmountRootfs", q, err)
		}
		if n, err := s.Backend().Mounted(csLayer); err != nil || n != 0 {
			t.Errorf("containers/storage still counts %d mounts, %v", n, err)
		}
		for _, id := range []string{own, cs} {
			if err := s.RemoveRootfs(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// pushedBusybox serves the busybox test image from a new registry and
// gives its reference.
func pushedBusybox(t *testing.T) string {
	t.Helper()
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	return reg.push(t, "busybox:latest", busybox)
}
