package engine

import (
	"context"
	"fmt"
	"path"
	"path/filepath"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/container"
)

// Image mounts (--mount type=image,source=IMAGE,target=…, API 1.48) show
// a local image's files, read-only, at the target: all of them, or the
// directory or file ImageOptions.Subpath names inside the image. The
// create resolves the image (no pull, as Docker) and records its ID as
// the mount point's Source, with the reference as given as its Name: the
// mount keeps showing that image when the reference moves or goes (rmi
// -f), and the image counts as in use until the container is removed
// (package images). Each start mounts it anew (stageMounts).

// imageMountPoint fills mp, the record of image mount m, at create.
func (e *Engine) imageMountPoint(ctx context.Context, m mounttypes.Mount, mp *containertypes.MountPoint) error {
	invalid := func(msg string) error {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid mount config for type %q: %s", m.Type, msg))
	}
	if m.Source == "" {
		return invalid("field Source must not be empty")
	}
	if o := m.ImageOptions; o != nil && o.Subpath != "" && !filepath.IsLocal(o.Subpath) {
		// Docker's wording, which speaks of volumes for images too.
		return invalid("subpath must be a relative path within the volume")
	}
	img, err := e.images.LookupImage(ctx, m.Source)
	if err != nil {
		return err
	}
	mp.Name, mp.Source, mp.RW = m.Source, img.ID, false
	mp.Propagation = mounttypes.PropagationRPrivate
	return nil
}

// imageMountAt is c's image mount point at dst, if any.
func imageMountAt(c *container.Container, dst string) *containertypes.MountPoint {
	for i := range c.Mounts {
		if mp := &c.Mounts[i]; mp.Type == mounttypes.TypeImage && mp.Destination == dst {
			return mp
		}
	}
	return nil
}

// imageSubpathOf is the subpath of the image hc mounts at dst, if any.
func imageSubpathOf(hc *containertypes.HostConfig, dst string) string {
	if hc == nil {
		return ""
	}
	for _, m := range hc.Mounts {
		if m.Type == mounttypes.TypeImage && m.ImageOptions != nil && path.Clean(m.Target) == dst {
			return m.ImageOptions.Subpath
		}
	}
	return ""
}
