//go:build integration

package integration

import (
	"context"
	"io"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// An attach stream ends once the container's exit is recorded, as
// Docker's: a client that read the output to its end finds the container
// exited (its exit code, not a running container's 0) and its network
// endpoint released, so that the network it ran on is removed at once
// (Docker's integration helper RunAttach, followed by a network removal).
func TestAttachEndsAfterExit(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for i := range 10 {
		if _, err := c.NetworkCreate(ctx, "attachnet", client.NetworkCreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:           &containertypes.Config{Image: ref, Cmd: []string{"sh", "-c", "echo ran; exit 3"}, AttachStdout: true, AttachStderr: true},
			HostConfig:       &containertypes.HostConfig{NetworkMode: "attachnet"},
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"attachnet": {}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, att.Reader); err != nil {
			t.Fatal(err)
		}
		att.Close()
		insp, err := c.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := insp.Container.State; st.Status != "exited" || st.ExitCode != 3 {
			t.Fatalf("run %d: after the attach stream ended the container is %s with code %d, want exited with 3", i, st.Status, st.ExitCode)
		}
		if _, err := c.NetworkRemove(ctx, "attachnet", client.NetworkRemoveOptions{}); err != nil {
			t.Fatalf("run %d: removing the network the container ran on: %v", i, err)
		}
		if _, err := c.ContainerRemove(ctx, cr.ID, client.ContainerRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
