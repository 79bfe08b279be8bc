package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/spec"
	"github.com/hutch-engine/hutch/engine/volume"
)

// createdMounts is what a container's create made of its mounts.
type createdMounts struct {
	points    []containertypes.MountPoint // inspect's Mounts
	inherited []string                    // destinations --volumes-from gave
	made      []string                    // volumes made for it
	copyUp    []containertypes.MountPoint // volumes to fill from the image
}

// containerMounts resolves the binds, mounts, the mount points of
// --volumes-from and the anonymous volumes (Config.Volumes: the image's
// VOLUME and -v /path) of a new container into the mount points its
// record keeps, making the volumes that do not exist yet. On error it has
// removed what it made.
func (e *Engine) containerMounts(ctx context.Context, cfg *containertypes.Config, hc *containertypes.HostConfig) (cm createdMounts, err error) {
	defer func() {
		if err != nil {
			e.removeVolumes(cm.made)
			cm = createdMounts{}
		}
	}()
	taken := map[string]bool{}
	add := func(m mounttypes.Mount, mode string) error {
		mp := containertypes.MountPoint{Type: m.Type, Destination: path.Clean(m.Target), Mode: mode, RW: !m.ReadOnly}
		if taken[mp.Destination] {
			//lint:ignore ST1005 Docker's wording, which clients show as is
			return fmt.Errorf("Duplicate mount point: %s: %w", mp.Destination, errdefs.ErrInvalidArgument)
		}
		switch m.Type {
		case mounttypes.TypeBind:
			mp.Source = path.Clean(m.Source)
			mp.Propagation = mounttypes.PropagationRPrivate
			if m.BindOptions != nil && m.BindOptions.Propagation != "" {
				mp.Propagation = m.BindOptions.Propagation
			}
		case mounttypes.TypeVolume:
			v, err := e.mountVolume(m, &cm)
			if err != nil {
				return err
			}
			mp.Name, mp.Source, mp.Driver = v.Name, v.Source(), localDriver
			if src := v.Source(); src != v.Mountpoint {
				// A bind volume: its device must be a directory, as
				// Docker's mount of it finds at start.
				if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
					return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("error while mounting volume '%s': failed to mount local volume: mount %s:%s, flags: 0x1000: no such file or directory", v.Mountpoint, src, v.Mountpoint))
				}
			}
			// A tmpfs volume is not filled: Docker's copy goes into a
			// mount made for it and gone with it.
			if (m.VolumeOptions == nil || !m.VolumeOptions.NoCopy) && !v.Tmpfs() {
				cm.copyUp = append(cm.copyUp, mp)
			}
		case mounttypes.TypeImage:
			if err := e.imageMountPoint(ctx, m, &mp); err != nil {
				return err
			}
		case mounttypes.TypeTmpfs:
		default:
			return nil // refused with Docker's words when the spec is built
		}
		taken[mp.Destination] = true
		cm.points = append(cm.points, mp)
		return nil
	}
	for _, raw := range hc.Binds {
		m, err := spec.ParseBind(raw)
		if err != nil {
			return cm, err
		}
		mode := ""
		if f := strings.SplitN(raw, ":", 3); len(f) == 3 {
			mode = f[2]
		}
		if err := add(m, mode); err != nil {
			return cm, err
		}
	}
	for _, m := range hc.Mounts {
		if err := add(m, ""); err != nil {
			return cm, err
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(hc.Tmpfs)) {
		taken[path.Clean(dst)] = true
	}
	for _, raw := range hc.VolumesFrom {
		points, err := e.volumesFrom(ctx, raw)
		if err != nil {
			return cm, err
		}
		for _, mp := range points {
			if !taken[mp.Destination] {
				taken[mp.Destination] = true
				cm.points = append(cm.points, mp)
				cm.inherited = append(cm.inherited, mp.Destination)
			}
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(cfg.Volumes)) {
		if !path.IsAbs(dst) || path.Clean(dst) == "/" {
			return cm, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid volume %q: the mount point must be an absolute path other than /", dst))
		}
		if taken[path.Clean(dst)] {
			continue
		}
		if err := add(mounttypes.Mount{Type: mounttypes.TypeVolume, Target: dst}, ""); err != nil {
			return cm, err
		}
	}
	return cm, nil
}

// createBindSources makes the missing sources of c's binds before a start,
// as Docker does: those of -v (HostConfig.Binds) always, those of --mount
// when they ask for it (BindOptions.CreateMountpoint, which compose sets
// for its short syntax). They are the user's own directories, made by the
// engine's user.
func createBindSources(hc *containertypes.HostConfig) error {
	var srcs []string
	for _, b := range hc.Binds {
		if m, err := spec.ParseBind(b); err == nil && m.Type == mounttypes.TypeBind {
			srcs = append(srcs, m.Source)
		}
	}
	for _, m := range hc.Mounts {
		if m.Type == mounttypes.TypeBind && m.BindOptions != nil && m.BindOptions.CreateMountpoint && path.IsAbs(m.Source) {
			srcs = append(srcs, m.Source)
		}
	}
	for _, src := range srcs {
		if _, err := os.Lstat(src); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(src, 0o755); err != nil {
			return fmt.Errorf("error while creating mount source path '%s': %w", src, err)
		}
	}
	return nil
}

// volumesFrom is one --volumes-from entry ("container[:ro|rw]"): the
// volume and bind mount points of that container, as Docker copies them
// (read-only with ro, else as they are there; tmpfs mounts are not
// copied). The container need not run.
func (e *Engine) volumesFrom(ctx context.Context, raw string) ([]containertypes.MountPoint, error) {
	ref, mode, _ := strings.Cut(raw, ":")
	if ref == "" {
		return nil, errdefs.ErrInvalidArgument.WithMessage("volumes-from specification cannot be an empty string")
	}
	readOnly := false
	for _, m := range strings.Split(mode, ",") {
		switch m {
		case "", "rw", "z", "Z", "consistent", "cached", "delegated": // SELinux labels and macOS consistency: nothing to do here
		case "ro":
			readOnly = true
		default:
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid mode: %s", mode))
		}
	}
	src, err := e.containers.Get(ctx, ref)
	if errdefs.IsNotFound(err) {
		// The request names it: a bad argument, not a missing resource
		// of the request's own path, as Docker answers.
		return nil, errdefs.ErrInvalidArgument.WithMessage(err.Error())
	}
	if err != nil {
		return nil, err
	}
	var out []containertypes.MountPoint
	for _, mp := range src.Mounts {
		if mp.Type != mounttypes.TypeVolume && mp.Type != mounttypes.TypeBind {
			continue
		}
		if subpathOf(src.HostConfig, mp.Destination) != "" {
			// The record's source is the whole volume: copied as it is,
			// it would show more than the other container sees.
			return nil, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("--volumes-from %s: its volume at %s has a subpath, which is not copied yet", ref, mp.Destination))
		}
		mp.RW = mp.RW && !readOnly
		mp.Mode = ""
		out = append(out, mp)
	}
	return out, nil
}

// subpathOf is the subpath of the volume hc mounts at dst, if any.
func subpathOf(hc *containertypes.HostConfig, dst string) string {
	if hc == nil {
		return ""
	}
	for _, m := range hc.Mounts {
		if m.Type == mounttypes.TypeVolume && m.VolumeOptions != nil && m.VolumeOptions.Subpath != "" && path.Clean(m.Target) == dst {
			return m.VolumeOptions.Subpath
		}
	}
	return ""
}

// inheritedMounts are c's mount points that --volumes-from copied.
func inheritedMounts(c *container.Container) []containertypes.MountPoint {
	var out []containertypes.MountPoint
	for _, mp := range c.Mounts {
		if slices.Contains(c.Runtime.Inherited, mp.Destination) {
			out = append(out, mp)
		}
	}
	return out
}

// mountVolume is the volume m names, made if it does not exist (with m's
// labels), or a new anonymous one when m names none.
func (e *Engine) mountVolume(m mounttypes.Mount, cm *createdMounts) (*volume.Volume, error) {
	var labels, opts map[string]string
	if o := m.VolumeOptions; o != nil {
		if o.Subpath != "" {
			// Docker's checks; the subpath itself is looked for at start.
			if m.Source == "" {
				return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid mount config for type %q: must not set Subpath when using anonymous volumes", m.Type))
			}
			if !filepath.IsLocal(o.Subpath) {
				return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid mount config for type %q: subpath must be a relative path within the volume", m.Type))
			}
		}
		labels = o.Labels
		if o.DriverConfig != nil {
			if err := checkDriver(m.Source, o.DriverConfig.Name, o.DriverConfig.Options); err != nil {
				return nil, err
			}
			opts = o.DriverConfig.Options
		}
	}
	v, made, err := e.volumes.Create(m.Source, labels, opts, m.Source == "")
	if err != nil {
		return nil, err
	}
	if made {
		cm.made = append(cm.made, v.Name)
		e.volumeEvent(eventtypes.ActionCreate, v.Name)
	}
	return v, nil
}

// setUpRootfs does, at create, what Docker does in a new container's
// files: it copies the image's content at each volume's mount point into
// the volume (or the volume's subpath, hc's VolumeOptions.Subpath) when
// that is empty, and makes workdir (root's, 0755) when it is missing. The
// rootfs is mounted only when one of them is asked for.
func (e *Engine) setUpRootfs(ctx context.Context, rootfsID string, hc *containertypes.HostConfig, mps []containertypes.MountPoint, workdir string) error {
	if len(mps) == 0 && workdir == "" {
		return nil
	}
	rootfs, err := e.images.MountRootfs(ctx, rootfsID)
	if err != nil {
		return err
	}
	defer e.images.UnmountRootfs(context.WithoutCancel(ctx), rootfsID)
	if workdir != "" {
		if err := makeWorkdir(rootfs, workdir); err != nil {
			return err
		}
	}
	for _, mp := range mps {
		dir := mp.Source
		if sub := subpathOf(hc, mp.Destination); sub != "" {
			p, done, err := openSubpathDir(dir, sub)
			if err != nil {
				// Not there, or not the volume's: the start refuses it
				// with Docker's words; nothing to fill.
				continue
			}
			defer done()
			dir = p
		}
		if err := volume.CopyUp(rootfs, mp.Destination, dir); err != nil {
			return fmt.Errorf("volume %s at %s: %w", mp.Name, mp.Destination, err)
		}
	}
	return nil
}

// acquireVolumes mounts the tmpfs volumes of c that no running container
// has mounted (volume.Store.Acquire); the release it returns lets go of
// them, once. On error nothing stays acquired.
func (e *Engine) acquireVolumes(c *container.Container) (release func(), err error) {
	var held []*volume.Volume
	release = func() {
		for _, v := range held {
			if err := e.volumes.Release(v); err != nil {
				e.log.Warn("releasing a volume", "container", c.ID, "volume", v.Name, "err", err)
			}
		}
		held = nil
	}
	for _, mp := range c.Mounts {
		if mp.Type != mounttypes.TypeVolume {
			continue
		}
		v, err := e.volumes.Get(mp.Name)
		if err != nil {
			release()
			return nil, err
		}
		if err := e.volumes.Acquire(v); err != nil {
			release()
			return nil, err
		}
		if v.Tmpfs() {
			held = append(held, v)
		}
	}
	return release, nil
}

// volumeDirs are c's volume directories by destination, for the spec.
func volumeDirs(c *container.Container) map[string]string {
	var out map[string]string
	for _, mp := range c.Mounts {
		if mp.Type == mounttypes.TypeVolume {
			if out == nil {
				out = map[string]string{}
			}
			out[mp.Destination] = mp.Source
		}
	}
	return out
}

// removeAnonymousVolumes removes c's anonymous volumes that no other
// container mounts: `docker rm -v`, and --rm.
func (e *Engine) removeAnonymousVolumes(ctx context.Context, c *container.Container) error {
	var names []string
	for _, mp := range c.Mounts {
		if mp.Type != mounttypes.TypeVolume {
			continue
		}
		if v, err := e.volumes.Get(mp.Name); err == nil && v.Anonymous {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	e.volMu.Lock()
	defer e.volMu.Unlock()
	used, err := e.volumeUsers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if len(used[n]) == 0 {
			err := e.volumes.Remove(n)
			if err == nil {
				e.volumeEvent(eventtypes.ActionDestroy, n)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeVolumes removes the volumes names, made for a create that failed.
func (e *Engine) removeVolumes(names []string) {
	for _, n := range names {
		if err := e.volumes.Remove(n); err != nil {
			e.log.Warn("removing a volume of a failed create", "volume", n, "err", err)
		}
	}
}
