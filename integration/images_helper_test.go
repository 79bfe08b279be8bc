//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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

// bigImage is Busybox plus one layer of 4 MiB files holding size bytes in
// all under /data/big: random bytes (the blob is as big as its content),
// or a repeated line (the blob is a small fraction of what it extracts
// to). The content depends only on size and random.
func bigImage(t *testing.T, size int64, random bool) v1.Image {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "big")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const fileSize = 4 << 20
	rng := rand.NewChaCha8([32]byte{'h', 'u', 't', 'c', 'h'})
	line := []byte("hutch fills the disk with this line, again and again.\n")
	buf := make([]byte, fileSize)
	for i := 0; int64(i)*fileSize < size; i++ {
		n := min(size-int64(i)*fileSize, fileSize)
		if random {
			rng.Read(buf[:n])
		} else {
			for j := range buf[:n] {
				buf[j] = line[j%len(line)]
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), buf[:n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, cleanup, err := testimage.Large(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return img
}

// pushForLastLayer pushes img to ref and returns the digest of its last
// layer, the one a test breaks the transfer of.
func pushForLastLayer(t *testing.T, img v1.Image, ref string) v1.Hash {
	t.Helper()
	if err := testimage.Push(context.Background(), ref, img); err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	last, err := ls[len(ls)-1].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return last
}
