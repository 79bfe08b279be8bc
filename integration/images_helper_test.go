//go:build integration

package integration

import (
	"context"
	"sync"
	"testing"

	"github.com/hutch-engine/hutch/storage/testimage"
)

// sharedRegistry is one plain docker-registry for the tests that only need
// an image, with busybox pushed once.
var (
	sharedOnce sync.Once
	shared     *registry
	sharedErr  error
	busyboxRef string
)

// busybox returns a pullable reference of the busybox test image, served by
// a real docker-registry on loopback.
func busybox(t *testing.T) string {
	t.Helper()
	sharedOnce.Do(func() {
		shared = startRegistry(sharedT{t}, "", "")
		img, err := testimage.Busybox()
		if err != nil {
			sharedErr = err
			return
		}
		busyboxRef = shared.Addr + "/library/busybox:latest"
		sharedErr = testimage.Push(context.Background(), busyboxRef, img)
	})
	if sharedErr != nil {
		t.Fatalf("pushing the busybox test image: %v", sharedErr)
	}
	return busyboxRef
}

// sharedT keeps the shared registry alive past the first test that asked
// for it: its cleanup runs when the test binary ends (TestMain).
type sharedT struct{ *testing.T }

func (s sharedT) Cleanup(f func()) { atExit = append(atExit, f) }
func (s sharedT) TempDir() string {
	d, err := mkdirTempShared()
	if err != nil {
		s.Fatal(err)
	}
	return d
}

// pulled starts a daemon and pulls busybox into it.
func pulled(t *testing.T, args ...string) (*daemon, string) {
	t.Helper()
	ref := busybox(t)
	d := startDaemon(t, args...)
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("docker pull %s: %v\n%s\n--- daemon log ---\n%s", ref, err, out, d.Log())
	}
	return d, ref
}
