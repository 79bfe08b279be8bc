package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"go.podman.io/storage/drivers/overlay"
	"golang.org/x/sys/unix"
)

const fuseSuperMagic = 0x65735546

// prepareDriver checks that a driver really works here before the library
// store is opened with it. The library's own overlay check silently falls
// back to fuse-overlayfs and never test-mounts fuse-overlayfs, so hutch
// tries both itself.
func prepareDriver(ctx context.Context, name string, opts Options) (driverChoice, error) {
	switch name {
	case DriverOverlay:
		return driverChoice{name: DriverOverlay}, probeNativeOverlay(opts)
	case DriverFuse:
		path, err := exec.LookPath("fuse-overlayfs")
		if err != nil {
			return driverChoice{}, fmt.Errorf("fuse-overlayfs not installed: %w", err)
		}
		if err := probeFuseOverlay(ctx, path, opts.GraphRoot); err != nil {
			return driverChoice{}, err
		}
		return driverChoice{name: DriverFuse, mountProgram: path}, nil
	case DriverVFS:
		return driverChoice{name: DriverVFS}, nil
	}
	return driverChoice{}, fmt.Errorf("unknown driver %q", name)
}

// probeNativeOverlay test-mounts kernel overlayfs (with userxattr inside a
// user namespace) where the layers will live. The library records its
// verdict under the driver's directories; a failed probe removes them.
func probeNativeOverlay(opts Options) error {
	home := filepath.Join(opts.GraphRoot, "overlay")
	runhome := filepath.Join(opts.RunRoot, "overlay")
	_, errHome := os.Lstat(home)
	_, errRun := os.Lstat(runhome)
	ok, err := overlay.SupportsNativeOverlay(home, runhome)
	if ok && err == nil {
		return nil
	}
	if errHome != nil {
		_ = os.RemoveAll(home)
	}
	if errRun != nil {
		_ = os.RemoveAll(runhome)
	}
	if err != nil {
		return fmt.Errorf("native overlay: %w", err)
	}
	if errHome == nil {
		if b, _ := os.ReadFile(filepath.Join(home, ".has-mount-program")); strings.TrimSpace(string(b)) == "true" {
			return errors.New("native overlay: this graph root's overlay layers were made with a mount program")
		}
	}
	return errors.New("native overlay: test mount failed (kernel, backing file system or user namespace does not allow it)")
}

// probeFuseOverlay mounts a throwaway fuse-overlayfs and unmounts it again.
func probeFuseOverlay(ctx context.Context, program, graphRoot string) error {
	dir, err := os.MkdirTemp(graphRoot, ".probe-fuse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lower, upper, work, merged := filepath.Join(dir, "l"), filepath.Join(dir, "u"), filepath.Join(dir, "w"), filepath.Join(dir, "m")
	for _, d := range []string{lower, upper, work, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "probe"), nil, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, program, "-o",
		fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work), merged).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fuse-overlayfs test mount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer unmountFuse(merged)
	var st unix.Statfs_t
	if err := unix.Statfs(merged, &st); err != nil {
		return fmt.Errorf("fuse-overlayfs test mount: %w", err)
	}
	if st.Type != fuseSuperMagic {
		return fmt.Errorf("fuse-overlayfs test mount: %s is not a FUSE mount", merged)
	}
	if _, err := os.Stat(filepath.Join(merged, "probe")); err != nil {
		return fmt.Errorf("fuse-overlayfs test mount: %w", err)
	}
	return nil
}

func unmountFuse(path string) {
	if err := unix.Unmount(path, 0); err == nil {
		return
	}
	for _, prog := range []string{"fusermount3", "fusermount"} {
		if err := exec.Command(prog, "-u", path).Run(); err == nil {
			return
		}
	}
	_ = unix.Unmount(path, unix.MNT_DETACH)
}

// unmountUnder lazily unmounts every mount point strictly below the given
// roots (a root may itself be a mount the user made), deepest first: what a
// failed driver initialisation may leave behind.
func unmountUnder(roots ...string) {
	infos, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		for _, r := range roots {
			if strings.HasPrefix(i.Mountpoint, r+"/") {
				return false, false
			}
		}
		return true, false
	})
	if err != nil {
		return
	}
	sort.Slice(infos, func(a, b int) bool { return len(infos[a].Mountpoint) > len(infos[b].Mountpoint) })
	for _, i := range infos {
		_ = unix.Unmount(i.Mountpoint, unix.MNT_DETACH)
	}
}
