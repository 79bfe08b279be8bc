package engine

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

// sharedNamespace resolves --pid container:<ref> (kind "pid") or --ipc
// container:<ref> ("ipc") to the namespace of that container's process,
// which must run, as Docker's checks say: an unknown container is a bad
// parameter (400), a stopped one a conflict (409), or for the PID
// namespace the start's system error (500) Docker's spec builder makes of
// it.
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
		if kind == "pid" {
			return nil, "", errdefs.ErrInternal.WithMessage(fmt.Sprintf("failed to join PID namespace: container %s is not running", other.ID))
		}
		return nil, "", errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", other.ID))
	}
	return other, fmt.Sprintf("/proc/%d/ns/%s", other.State.Pid, kind), nil
}

// checkSharedNamespaces refuses at create a --pid or --ipc
// container:<ref> naming no container, as Docker does (a bad parameter,
// so that the CLI does not go looking for the image); whether it runs is
// the start's business.
func (e *Engine) checkSharedNamespaces(ctx context.Context, hc *containertypes.HostConfig) error {
	for _, ref := range []string{hc.IpcMode.Container(), hc.PidMode.Container()} {
		if ref == "" {
			continue
		}
		if _, err := e.containers.Get(ctx, ref); errdefs.IsNotFound(err) {
			return errdefs.ErrInvalidArgument.WithMessage(err.Error())
		} else if err != nil {
			return err
		}
	}
	return nil
}
