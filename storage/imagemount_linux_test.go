package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/sys/mountinfo"
)

// An image mounts read-only with its files, nests, and once every mount
// is released nothing stays mounted; the store's driver decides how.
func TestMountImage(t *testing.T) {
	for _, driver := range []string{"", DriverVFS} {
		t.Run("driver="+driver, func(t *testing.T) {
			ctx := context.Background()
			ref := pushedBusybox(t)
			s := newStore(t, driver)
			if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
				t.Fatal(err)
			}
			id, _, err := s.ContainerImage(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.MountImage(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := s.MountImage(ctx, id); err != nil || again != p {
				t.Errorf("nested mount = %q, %v", again, err)
			}
			if _, err := os.Stat(filepath.Join(p, "bin/busybox")); err != nil {
				t.Error(err)
			}
			if s.Driver() != DriverVFS {
				// vfs has no mount: the read-only bind into the
				// container is what protects the layer there.
				err := os.WriteFile(filepath.Join(p, "written"), nil, 0o644)
				if !errors.Is(err, syscall.EROFS) {
					t.Errorf("a write into the mounted image: %v", err)
				}
			}
			for range 2 {
				if err := s.UnmountImage(ctx, id); err != nil {
					t.Error(err)
				}
			}
			home := filepath.Join(s.GraphRoot(), "overlay") + "/"
			below, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
				return !strings.HasPrefix(m.Mountpoint, home), false
			})
			if err != nil || len(below) != 0 {
				t.Errorf("layers still mounted: %v, %v", below, err)
			}
			missing := "sha256:" + strings.Repeat("0", 64)
			if _, err := s.MountImage(ctx, missing); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "No such image") {
				t.Errorf("MountImage of a missing image = %v", err)
			}
		})
	}
}
