package engine

import (
	"context"
	"path"
	"strings"

	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/archive"
	"github.com/hutch-engine/hutch/engine/container"
)

// cpTarget is where a docker cp path lives: in the container's rootfs, or
// in the source directory of the bind or volume mounted over it (Docker's
// cp goes through them). Paths are resolved inside that directory as they
// are inside the rootfs: no symlink of the volume or bind leads out of it.
// tmpfs mounts exist only in a running container's mount namespace: cp
// sees the rootfs under them.
type cpTarget struct {
	c *container.Container
	// rootfs is the container's root filesystem (for /etc/passwd).
	rootfs *archive.Root
	// root holds the path: the rootfs or the mount's source.
	root *archive.Root
	// abs is the path inside root, with its trailing "/" or "/." kept.
	abs string
	// name is the path's last element as the client named it.
	name string
	// mount is the bind or volume holding the path (nil: the rootfs).
	mount *containertypes.MountPoint
	done  func()
}

// openCpTarget mounts the container's rootfs and finds where p lives;
// with rootfsOnly, in the rootfs whatever is mounted over it (the
// builder's view: COPY writes into the image, not into a volume). close
// releases what it opened.
func (e *Engine) openCpTarget(ctx context.Context, ref, p string, rootfsOnly bool) (*cpTarget, error) {
	c, rootfs, done, err := e.openContainerFS(ctx, ref)
	if err != nil {
		return nil, err
	}
	abs := archive.ContainerPath(p)
	t := &cpTarget{c: c, rootfs: rootfs, root: rootfs, abs: abs, name: archive.StatName(abs), done: done}
	if rootfsOnly {
		return t, nil
	}
	mp, inner := mountOf(c.Mounts, rootfs, abs)
	if mp == nil {
		return t, nil
	}
	mroot, err := openMountRoot(c, mp)
	if err != nil {
		done()
		return nil, err
	}
	t.root, t.abs, t.mount = mroot, inner, mp
	t.done = func() { mroot.Close(); done() }
	return t, nil
}

func (t *cpTarget) close() { t.done() }

// readOnly tells whether writes to the path are refused, with Docker's
// words.
func (t *cpTarget) readOnly() string {
	if t.mount != nil {
		if !t.mount.RW {
			return "mounted volume is marked read-only"
		}
		return ""
	}
	if t.c.HostConfig != nil && t.c.HostConfig.ReadonlyRootfs {
		return "container rootfs is marked read-only"
	}
	return ""
}

// mountOf finds the bind or volume mount holding abs, once the symlinks
// of abs's parent are followed in the rootfs (a link to a volume's path
// leads into the volume), and abs's path inside the mount's source.
func mountOf(mounts []containertypes.MountPoint, rootfs *archive.Root, abs string) (*containertypes.MountPoint, string) {
	if len(mounts) == 0 {
		return nil, ""
	}
	suffix := ""
	switch {
	case strings.HasSuffix(abs, "/."):
		suffix = "/."
	case strings.HasSuffix(abs, "/") && abs != "/":
		suffix = "/"
	}
	base := strings.TrimSuffix(abs, suffix)
	resolved := base
	if dir, err := rootfs.Follow(path.Dir(base)); err == nil {
		resolved = path.Join("/", dir, path.Base(base))
	}
	var best *containertypes.MountPoint
	for i := range mounts {
		m := &mounts[i]
		if m.Source == "" || (m.Type != mounttypes.TypeBind && m.Type != mounttypes.TypeVolume) {
			continue
		}
		if resolved != m.Destination && !strings.HasPrefix(resolved, m.Destination+"/") {
			continue
		}
		if best == nil || len(m.Destination) > len(best.Destination) {
			best = m
		}
	}
	if best == nil {
		return nil, ""
	}
	inner := path.Join("/", strings.TrimPrefix(resolved, best.Destination))
	if suffix != "" && inner != "/" {
		inner += suffix
	}
	return best, inner
}
