package engine

import (
	"context"
	"fmt"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
)

// errNoFreezer explains why pause cannot work: rootless containers get a
// cgroup (and so a freezer) only on cgroup v2 with a delegated subtree.
var errNoFreezer = errdefs.ErrNotImplemented.WithMessage("cannot pause: there is no cgroup freezer for rootless containers on this host " +
	"(cgroup v1, or cgroup v2 without delegation); boot with systemd.unified_cgroup_hierarchy=1 and delegate the user's cgroup (hutch check shows how)")

// ContainerPause freezes a running container.
func (e *Engine) ContainerPause(ctx context.Context, ref string) error {
	if err := e.freeze(ctx, ref, true); err != nil {
		return err
	}
	e.containerEventByID(ctx, ref, eventtypes.ActionPause, nil)
	return nil
}

// ContainerUnpause thaws a paused container.
func (e *Engine) ContainerUnpause(ctx context.Context, ref string) error {
	if err := e.freeze(ctx, ref, false); err != nil {
		return err
	}
	e.containerEventByID(ctx, ref, eventtypes.ActionUnPause, nil)
	return nil
}

func (e *Engine) freeze(ctx context.Context, ref string, pause bool) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if c, err = e.afterStart(ctx, c.ID); err != nil {
		return err
	}
	if pause {
		err = c.State.CheckPause(c.ID)
	} else {
		err = c.State.CheckUnpause(c.ID)
	}
	if err != nil {
		return err
	}
	if !e.host.CgroupLimits {
		return errNoFreezer
	}
	client := e.runs.client(c.ID)
	if client == nil {
		return errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", c.ID))
	}
	if pause {
		err = client.Pause(ctx)
	} else {
		err = client.Resume(ctx)
	}
	if err != nil {
		return err
	}
	return e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		if pause {
			return r.State.SetPaused(r.ID)
		}
		return r.State.SetUnpaused(r.ID)
	})
}
