//go:build integration

package integration

import (
	"context"
	"testing"

	"github.com/moby/moby/client"
)

// A stop right after the start finds the command running, as in Docker:
// a namespace's init ignores the SIGTERM it does not handle, so echo
// prints and exits 0. The start used to return before the runtime had
// executed the command, and the signal ended the runtime (Go's, status
// 2) with nothing printed.
func TestStopRightAfterStart(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for range 5 {
		id := dockerOK(t, d, "create", ref, "echo", "ran")
		if _, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStop(ctx, id, client.ContainerStopOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := dockerOK(t, d, "inspect", "-f", "{{.State.ExitCode}}", id); got != "0" {
			t.Errorf("exit code %s, want 0", got)
		}
		if got := dockerOK(t, d, "logs", id); got != "ran" {
			t.Errorf("output %q, want the command's", got)
		}
		dockerOK(t, d, "rm", id)
	}
}
