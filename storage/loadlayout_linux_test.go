package storage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// layoutArchive writes an OCI layout whose index.json names idx (as
// name, when not "") and returns it as a tar; spoil, when set, changes
// the layout's files first.
func layoutArchive(t *testing.T, name string, spoil func(dir string)) ([]byte, string) {
	t.Helper()
	idx, _, _, _ := twoPlatforms(t)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	var opts []layout.Option
	if name != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{layoutNameKey: name}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		t.Fatal(err)
	}
	if spoil != nil {
		spoil(dir)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil || tw.Close() != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), d.String()
}

// An OCI layout naming an index loads as one multi-platform image whose
// ID is the index's digest, every platform available; a layout whose
// platform cannot load leaves nothing.
func TestLoadLayoutIndex(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, "")
	archive, idxDigest := layoutArchive(t, "docker.io/library/multi:1", nil)
	loaded, err := s.LoadImages(ctx, bytes.NewReader(archive), imagestore.LoadOptions{})
	if err != nil || len(loaded) != 1 || loaded[0].ID != idxDigest || len(loaded[0].Names) != 1 {
		t.Fatalf("LoadImages = %+v, %v", loaded, err)
	}
	img, err := s.LookupImage(ctx, "multi:1")
	if err != nil || img.ID != idxDigest || len(img.Platforms) != 2 || img.Instance == nil || img.Config.Architecture != runtime.GOARCH {
		t.Fatalf("LookupImage = %+v, %v", img, err)
	}
	for _, p := range img.Platforms {
		if !p.Available {
			t.Errorf("platform %+v not available", p.Descriptor.Platform)
		}
	}
	if list, err := s.ListImages(ctx); err != nil || len(list) != 1 {
		t.Errorf("ListImages = %d images, %v", len(list), err)
	}
	if _, err := s.LookupImagePlatform(ctx, "multi:1", &ocispec.Platform{OS: "linux", Architecture: "s390x"}); !errdefs.IsNotFound(err) {
		t.Errorf("LookupImagePlatform(s390x) = %v", err)
	}
	if _, err := s.DeleteImage(ctx, idxDigest); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, s)

	// The second platform's config spoiled: the first platform's image,
	// loaded before, goes too.
	spoiled, _ := layoutArchive(t, "docker.io/library/multi:1", func(dir string) {
		read := func(d string, v any) {
			b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:")))
			if err == nil {
				err = json.Unmarshal(b, v)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		var top, idx ocispec.Index
		b, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil || json.Unmarshal(b, &top) != nil {
			t.Fatal(err)
		}
		read(top.Manifests[0].Digest.String(), &idx)
		var man ocispec.Manifest
		read(idx.Manifests[1].Digest.String(), &man)
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", man.Config.Digest.Encoded()), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := s.LoadImages(ctx, bytes.NewReader(spoiled), imagestore.LoadOptions{}); err == nil {
		t.Fatal("a layout with a spoiled layer loaded")
	}
	assertEmpty(t, s)
}

// twoPlatforms is an index of busybox for the host and for another
// architecture, otherArch.
func twoPlatforms(t *testing.T) (idx v1.ImageIndex, native, other v1.Image, otherArch string) {
	t.Helper()
	native, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	otherArch = "arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "amd64"
	}
	if other, err = testimage.ForPlatform(native, "linux", otherArch, ""); err != nil {
		t.Fatal(err)
	}
	if idx, err = testimage.Index(native, other); err != nil {
		t.Fatal(err)
	}
	return idx, native, other, otherArch
}
