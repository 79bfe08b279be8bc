//go:build integration

package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// A client that attached before the start has all the output once the
// wait for the exit returns, as on Docker (which records the exit only
// after its attached streams are copied): dockerode's run ends its output
// stream when the wait returns, and lost "ran" when the exit came first.
func TestAttachedOutputBeforeExit(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for i := range 20 {
		cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{
			Image: ref, Cmd: []string{"sh", "-c", "echo ran; exit 2"}, AttachStdout: true, AttachStderr: true,
		}})
		if err != nil {
			t.Fatal(err)
		}
		att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		wait := c.ContainerWait(ctx, cr.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
		if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-wait.Result:
			if res.StatusCode != 2 {
				t.Fatalf("run %d: exit status %d, want 2", i, res.StatusCode)
			}
		case err := <-wait.Error:
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: no exit", i)
		}
		// Over the unix socket, what the daemon wrote before it answered
		// the wait is already in this end's buffer: read only that.
		var got []byte
		buf := make([]byte, 512)
		_ = att.Conn.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		for !bytes.Contains(got, []byte("ran\n")) {
			n, err := att.Reader.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		att.Close()
		if !bytes.Contains(got, []byte("ran\n")) {
			t.Fatalf("run %d: attached output at the exit %q, want it to hold \"ran\"", i, got)
		}
		if _, err := c.ContainerRemove(ctx, cr.ID, client.ContainerRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
