//go:build integration

package integration

import (
	"context"
	"testing"

	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/client"
)

// Clients that hang up in the middle of a pull leak no goroutine and leave
// no partial image; the pull can then be done whole.
func TestPullClientDisconnects(t *testing.T) {
	busybox(t)
	img, err := testimage.MultiLayer(8)
	if err != nil {
		t.Fatal(err)
	}
	ref := shared.Addr + "/library/multi:dropped"
	if err := testimage.Push(context.Background(), ref, img); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	c := d.Client(t)
	base := goroutines(t, d)
	for i := 0; i < 5; i++ {
		resp, err := c.ImagePull(context.Background(), ref, client.ImagePullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		resp.Read(buf)
		resp.Close()
	}
	if n := settledGoroutines(t, d, base); n > base+3 {
		t.Errorf("goroutines %d after 5 dropped pulls, %d before", n, base)
	}
	// Whatever the dropped pulls left, an image is whole or absent: it
	// runs if it is listed, and the pull completes.
	if out, err := d.Docker(t, "image", "inspect", ref); err == nil {
		if out, err := d.Docker(t, "run", "--rm", ref, "true"); err != nil {
			t.Errorf("an image left by dropped pulls does not run: %v %s", err, out)
		}
	} else if out == "" {
		t.Errorf("image inspect failed without a message")
	}
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("pull after dropped pulls: %v %s", err, out)
	}
	if out, err := d.Docker(t, "run", "--rm", ref, "true"); err != nil {
		t.Errorf("run after the pull: %v %s", err, out)
	}
}
