//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A stop or kill that arrives as the container ends by itself succeeds, as
// on Docker: compose's `up --exit-code-from` (and --abort-on-container-exit)
// stops every service, the one that just ended too, as soon as its attach
// stream ends, before hutch has recorded the exit. These are compose's API
// calls: attach, start, read to the end, then stop (or kill).
func TestStopKillAfterAttachEnds(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	one := func(i int) error {
		cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{
			Image: ref, Cmd: []string{"echo", "done"}, AttachStdout: true, AttachStderr: true,
		}})
		if err != nil {
			return err
		}
		defer c.ContainerRemove(ctx, cr.ID, client.ContainerRemoveOptions{Force: true})
		att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			return err
		}
		defer att.Close()
		if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		if _, err := io.Copy(io.Discard, att.Reader); err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		if i%2 == 0 {
			if _, err := c.ContainerStop(ctx, cr.ID, client.ContainerStopOptions{}); err != nil {
				return fmt.Errorf("stop as it exits: %w", err)
			}
		} else if _, err := c.ContainerKill(ctx, cr.ID, client.ContainerKillOptions{Signal: "TERM"}); err != nil && !errdefs.IsConflict(err) {
			// Docker: 409 when the exit is recorded already, else success.
			return fmt.Errorf("kill as it exits: %w", err)
		}
		if i%2 == 0 {
			// Docker's stop returns once the container is stopped.
			in, err := c.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
			if err != nil {
				return err
			}
			if in.Container.State.Running {
				return fmt.Errorf("running after its stop returned")
			}
		}
		return nil
	}
	for i := range 30 {
		if err := one(i); err != nil {
			t.Fatalf("container %d: %v\n--- daemon log ---\n%s", i, err, d.Log())
		}
	}
}
