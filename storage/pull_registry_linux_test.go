package storage

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/types/jsonstream"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// loopbackOnly keeps every registry request of s on this machine: a pull
// that would reach Docker Hub fails instead.
func loopbackOnly(s *Store) {
	s.proxy = func(u *url.URL) (*url.URL, error) {
		if isInsecureRegistry(context.Background(), u.Host, nil) {
			return nil, nil
		}
		return nil, fmt.Errorf("test: no traffic to %s", u.Host)
	}
}

func TestPullThroughMirror(t *testing.T) {
	mirror := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	mirror.push(t, "library/busybox:latest", busybox)
	manifestDigest, _, _ := digests(t, busybox)
	s := newStore(t, "")
	loopbackOnly(s)
	opts := PullOptions{Mirrors: []string{"http://" + mirror.host}}

	img, lines, err := pullLines(t, s, "busybox", opts)
	if err != nil {
		t.Fatalf("pull through the mirror: %v", err)
	}
	if lines[0] != "latest: Pulling from library/busybox" || lines[len(lines)-1] != "Status: Downloaded newer image for busybox:latest" {
		t.Errorf("stream:\n%s", strings.Join(lines, "\n"))
	}
	if !slices.Equal(img.RepoTags, []string{"busybox:latest"}) || !slices.Contains(img.RepoDigests, "busybox@"+manifestDigest) {
		t.Errorf("RepoTags %v, RepoDigests %v", img.RepoTags, img.RepoDigests)
	}

	// An image the mirror lacks is looked for on Docker Hub next.
	_, _, err = pullLines(t, s, "nothere", opts)
	if err == nil || !strings.Contains(err.Error(), "Mirrors also failed") || !strings.Contains(err.Error(), "no traffic to registry-1.docker.io") {
		t.Errorf("pull of an image the mirror lacks: %v", err)
	}
}

func TestPullByDigest(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	reg.push(t, "busybox:latest", busybox)
	manifestDigest, configDigest, _ := digests(t, busybox)
	ref := reg.host + "/busybox@" + manifestDigest
	s := newStore(t, "")
	img, lines, err := pullLines(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lines[0] != ref+": Pulling from busybox" || lines[len(lines)-1] != "Status: Downloaded newer image for "+ref {
		t.Errorf("stream:\n%s", strings.Join(lines, "\n"))
	}
	if img.ID != idByConfig(t, s, configDigest) || len(img.RepoTags) != 0 || !slices.Equal(img.RepoDigests, []string{ref}) {
		t.Errorf("image %+v", img)
	}
	_, lines, err = pullLines(t, s, ref, PullOptions{})
	if err != nil || lines[len(lines)-1] != "Status: Image is up to date for "+ref {
		t.Errorf("second pull: %v\n%s", err, strings.Join(lines, "\n"))
	}
}

func TestPullManifestList(t *testing.T) {
	reg := newRegistry(t, "", "")
	idx, native, other, otherArch := twoPlatforms(t)
	ref := reg.host + "/multiarch:latest"
	if err := testimage.PushIndex(context.Background(), ref, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	_, nativeConfig, layers := digests(t, native)
	_, otherConfig, _ := digests(t, other)
	s := newStore(t, "")

	img, lines, err := pullLines(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The name goes to the index: the image's ID is the index's digest,
	// as in Docker's containerd image store.
	if img.ID != idxDigest.String() || !slices.Contains(lines, "Digest: "+idxDigest.String()) ||
		!slices.Contains(img.RepoDigests, reg.host+"/multiarch@"+idxDigest.String()) {
		t.Errorf("default platform: image %+v\n%s", img, strings.Join(lines, "\n"))
	}

	img, lines, err = pullLines(t, s, ref, PullOptions{Platform: "linux/" + otherArch})
	if err != nil {
		t.Fatal(err)
	}
	layerID := strings.TrimPrefix(layers[0], "sha256:")[:12]
	if img.ID != idxDigest.String() || !slices.Contains(lines, layerID+": Already exists") ||
		lines[len(lines)-1] != "Status: Downloaded newer image for "+ref {
		t.Errorf("linux/%s: image %s\n%s", otherArch, img.ID, strings.Join(lines, "\n"))
	}
	// Both platforms are under the one name, each with its own config.
	for _, want := range []struct{ arch, config string }{{runtime.GOARCH, nativeConfig}, {otherArch, otherConfig}} {
		rec, err := s.LookupImagePlatform(context.Background(), ref, &ocispec.Platform{OS: "linux", Architecture: want.arch})
		if err != nil || rec.ID != idxDigest.String() || rec.Instance == nil || storedHex(t, s, rec.Instance.ID) != strings.TrimPrefix(want.config, "sha256:") {
			t.Errorf("linux/%s of %s: %+v, %v", want.arch, ref, rec, err)
		}
	}
	if list, err := s.ListImages(context.Background()); err != nil || len(list) != 1 || len(list[0].Platforms) != 2 {
		t.Errorf("ListImages = %+v, %v", list, err)
	}

	_, lines, err = pullLines(t, s, ref, PullOptions{Platform: "linux/s390x"})
	if !errdefs.IsNotFound(err) || err.Error() != "no matching manifest for linux/s390x in the manifest list entries" || len(lines) != 0 {
		t.Errorf("missing platform: %v\n%s", err, strings.Join(lines, "\n"))
	}
}

// TestPullCanceled cancels a pull in the middle of a layer download: the
// pull returns the cancellation and leaves nothing, not even a temporary
// file.
func TestPullCanceled(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	_, _, layers := digests(t, busybox)
	reg.stallBlob(layers[0])
	s := newStore(t, "")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lines []string
	_, err = s.Pull(ctx, ref, PullOptions{}, func(m jsonstream.Message) {
		lines = append(lines, line(m))
		if m.Status == "Downloading" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Pull = %v, want context.Canceled\n%s", err, strings.Join(lines, "\n"))
	}
	assertEmpty(t, s)
	if entries, err := os.ReadDir(s.tmpDir); err != nil || len(entries) != 0 {
		t.Errorf("temporary files left: %v, %v", entries, err)
	}
}

// TestPullWithEachDriver pulls and extracts with every driver of the probe
// order. Where FUSE is unusable, forcing fuse-overlayfs must fail clearly.
func TestPullWithEachDriver(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	for _, driver := range []string{DriverOverlay, DriverFuse, DriverVFS} {
		t.Run(driver, func(t *testing.T) {
			if driver == DriverFuse {
				if perr := probeFuseOverlay(context.Background(), "fuse-overlayfs", t.TempDir()); perr != nil {
					dir := t.TempDir()
					_, err := Open(context.Background(), Options{GraphRoot: dir + "/g", RunRoot: dir + "/r", Driver: driver})
					if err == nil || !strings.Contains(err.Error(), "fuse-overlayfs") {
						t.Errorf("FUSE unusable here (%v), yet forcing it gave %v", perr, err)
					}
					return
				}
			}
			s := newStore(t, driver)
			if s.Driver() != driver {
				t.Fatalf("Driver() = %s", s.Driver())
			}
			img, _, err := pullLines(t, s, ref, PullOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkRootfs(t, s, img.ID)
		})
	}
}
