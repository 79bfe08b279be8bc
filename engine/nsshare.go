package engine

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
)

// sharedNamespace resolves --pid container:<ref> (kind "pid") or --ipc
// container:<ref> ("ipc") to the namespace of that container's process,
// which must run, as Docker's checks say: an unknown container is a bad
// parameter (400), a stopped one a conflict (409).
func (e *Engine) sharedNamespace(ctx context.Context, c *container.Container, kind, ref string) (*container.Container, string, error) {
	other, err := e.containers.Get(ctx, ref)
	if errdefs.IsNotFound(err) {
		return nil, "", errdefs.ErrInvalidArgument.WithMessage(err.Error())
	} else if err != nil {
		return nil, "", err
	}
	if other.ID == c.ID {
		return nil, "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("cannot join own %s namespace", kind))
	}
	if !other.State.Running() || other.State.Pid <= 0 {
		return nil, "", errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", other.ID))
	}
	return other, fmt.Sprintf("/proc/%d/ns/%s", other.State.Pid, kind), nil
}
