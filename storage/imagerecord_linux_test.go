package storage

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

func TestImageRecordsTagUntag(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	manifestDigest, configDigest, _ := digests(t, busybox)
	s := newStore(t, "")
	if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	repoDigest := reg.host + "/busybox@" + manifestDigest
	img, err := s.LookupImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := busybox.ConfigFile()
	if img.ID != idByConfig(t, s, configDigest) || img.Descriptor == nil || img.Descriptor.Digest.String() != img.ID || !slices.Equal(img.Refs, []string{ref, repoDigest}) || len(img.Layers) != 1 ||
		img.Layers[0].DiffID.String() != cfg.RootFS.DiffIDs[0].String() || img.Layers[0].Size <= 0 || img.Config == nil ||
		!img.Created.Equal(testimage.Epoch) || !img.LastTagTime.IsZero() {
		t.Fatalf("LookupImage = %+v", img)
	}
	if s.Driver() == DriverOverlay && img.DriverData["UpperDir"] == "" {
		t.Errorf("DriverData = %v", img.DriverData)
	}
	if _, err := s.LookupImage(ctx, repoDigest); err != nil {
		t.Errorf("lookup by the recorded digest: %v", err)
	}

	// A tag adds no digest reference; it moves off another image.
	if err := s.TagImage(ctx, img.ID, "docker.io/library/mine:1"); err != nil {
		t.Fatal(err)
	}
	img, _ = s.LookupImage(ctx, "mine:1")
	if !slices.Equal(img.Refs, []string{ref, "docker.io/library/mine:1", repoDigest}) || img.LastTagTime.IsZero() {
		t.Errorf("after tag: %q, last tag %v", img.Refs, img.LastTagTime)
	}
	id2, err := s.ImportImage(ctx, bytes.NewReader(rootfsTar(t, false)), imagestore.ImportConfig{Comment: "other"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TagImage(ctx, id2, "docker.io/library/mine:1"); err != nil {
		t.Fatal(err)
	}
	if img, _ = s.LookupImage(ctx, ref); slices.Contains(img.Refs, "docker.io/library/mine:1") {
		t.Errorf("the tag stayed on the first image too: %q", img.Refs)
	}

	// Untagging the pulled tag keeps the digest reference, as Docker's
	// reference store does; untagging the digest removes it.
	if err := s.UntagImage(ctx, img.ID, ref); err != nil {
		t.Fatal(err)
	}
	if img, _ = s.LookupImage(ctx, img.ID); !slices.Equal(img.Refs, []string{repoDigest}) {
		t.Errorf("after untag of the tag: %q", img.Refs)
	}
	if err := s.UntagImage(ctx, img.ID, repoDigest); err != nil {
		t.Fatal(err)
	}
	if img, _ = s.LookupImage(ctx, img.ID); len(img.Refs) != 0 {
		t.Errorf("after untag of the digest: %q", img.Refs)
	}
	if _, err := s.LookupImage(ctx, repoDigest); !errdefs.IsNotFound(err) {
		t.Errorf("lookup of a removed digest = %v", err)
	}
	if err := s.TagImage(ctx, img.ID, "docker.io/library/x@"+manifestDigest); !errdefs.IsInvalidArgument(err) {
		t.Errorf("tag with a digest = %v", err)
	}

	if err := s.SetImageParent(ctx, id2, img.ID); err != nil {
		t.Fatal(err)
	}
	if child, err := s.LookupImage(ctx, id2); err != nil || child.Parent != img.ID {
		t.Errorf("parent = %+v, %v", child, err)
	}
	imgs, err := s.ListImages(ctx)
	if err != nil || len(imgs) != 2 {
		t.Errorf("ListImages = %d, %v", len(imgs), err)
	}
	for _, bad := range []string{"UPPER", "a b", "sha256:"} {
		if _, err := s.LookupImage(ctx, bad); !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
			t.Errorf("LookupImage(%q) = %v", bad, err)
		}
	}
	if _, err := s.LookupImage(ctx, "UPPER"); !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), "invalid reference format") {
		t.Errorf("LookupImage(UPPER) = %v", err)
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, "", "")
	multi, err := testimage.MultiLayer(2)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "multi:latest", multi)
	_, configDigest, _ := digests(t, multi)
	s := newStore(t, "")
	if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	savedID := idByConfig(t, s, configDigest)
	if err := s.TagImage(ctx, configDigest, "docker.io/library/mine:1"); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	err = s.SaveImages(ctx, []imagestore.SaveImage{{ID: configDigest, Names: []string{ref, "docker.io/library/mine:1"}}}, &archive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteImage(ctx, configDigest); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, s)

	// A broken archive loads nothing.
	for _, bad := range [][]byte{archive.Bytes()[:archive.Len()/2], []byte("not an archive")} {
		if _, err := s.LoadImages(ctx, bytes.NewReader(bad), imagestore.LoadOptions{}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("LoadImages of a broken archive = %v", err)
		}
		assertEmpty(t, s)
	}

	loaded, err := s.LoadImages(ctx, bytes.NewReader(archive.Bytes()), imagestore.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 || loaded[0].ID != savedID || !slices.Equal(loaded[0].Names, []string{ref, "docker.io/library/mine:1"}) || len(loaded[0].Replaced) != 0 {
		t.Fatalf("loaded = %+v", loaded)
	}
	checkRootfsFile(t, s, savedID, "data/layer1.txt")
	img, err := s.LookupImage(ctx, "mine:1")
	if err != nil || len(img.Layers) != 3 {
		t.Errorf("loaded image = %+v, %v", img, err)
	}

	// Loading moves names off the images that had them.
	other, err := s.ImportImage(ctx, bytes.NewReader(rootfsTar(t, false)), imagestore.ImportConfig{}, "docker.io/library/mine:2")
	if err != nil {
		t.Fatal(err)
	}
	archive.Reset()
	if err := s.SaveImages(ctx, []imagestore.SaveImage{{ID: configDigest, Names: []string{"docker.io/library/mine:2"}}}, &archive); err != nil {
		t.Fatal(err)
	}
	loaded, err = s.LoadImages(ctx, bytes.NewReader(archive.Bytes()), imagestore.LoadOptions{})
	if err != nil || len(loaded) != 1 || loaded[0].Replaced["docker.io/library/mine:2"] != other {
		t.Errorf("loaded = %+v, %v", loaded, err)
	}

	// Saving into a writer that fails stops the copy with the writer's error.
	err = s.SaveImages(ctx, []imagestore.SaveImage{{ID: configDigest}}, failingWriter{})
	if !errors.Is(err, errWriterBroken) {
		t.Errorf("SaveImages into a broken writer = %v", err)
	}
}

var errWriterBroken = errors.New("writer broken")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWriterBroken }
