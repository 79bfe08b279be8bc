//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestStopAsItExits stops containers that end on their own at that very
// moment, as testcontainers' cleanup does after wait.ForLog of a short
// command: the shim is gone before the exit is recorded, and the stop must
// succeed as Docker's does (its kill finds no such process), not answer
// "shim not running".
func TestStopAsItExits(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 30 {
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		// Some stops come before the end, some during, some after.
		time.Sleep(time.Duration(i%10) * time.Millisecond)
		timeout := 0
		if _, err := c.ContainerStop(ctx, created.ID, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
			t.Fatalf("stop %d: %v\n--- daemon log ---\n%s", i, err, d.Log())
		}
		insp, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if insp.Container.State.Running {
			t.Fatalf("stop %d returned with the container running: %+v", i, insp.Container.State)
		}
		if _, err := c.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
