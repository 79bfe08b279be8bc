package buildkit

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// localImages is the images.Store BuildKit resolves FROM against before
// the registry (buildx's docker driver asks for that: image-resolve-mode
// "local"). An image the engine has is offered as the manifest its ID
// names: the OCI manifest of its config and its uncompressed layers,
// whose digests are the engine's diff IDs. The manifest and its blobs are
// copied from the engine (docker save) into BuildKit's content store the
// first time and found there afterwards; the same image always has the
// same manifest, so BuildKit's cache keys hold.
type localImages struct {
	eng *engineClient
	cs  content.Store

	mu sync.Mutex // one copy of an image's blobs at a time
}

var _ images.Store = (*localImages)(nil)

// Get returns the engine's image called name (a normalised reference
// with a tag), or ErrNotFound.
func (l *localImages) Get(ctx context.Context, name string) (images.Image, error) {
	img, err := l.eng.inspectImage(ctx, name)
	if err != nil {
		return images.Image{}, err
	}
	id := digest.Digest(img.ID)
	if err := id.Validate(); err != nil {
		return images.Image{}, fmt.Errorf("image %s: id %q: %w", name, img.ID, cerrdefs.ErrNotFound)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	man, b, err := l.manifest(ctx, id)
	if err != nil {
		return images.Image{}, fmt.Errorf("copying image %s from the engine: %w", name, err)
	}
	// The manifest keeps its config and layers from BuildKit's pruning.
	labels := gcLabels(man)
	fields := make([]string, 0, len(labels))
	for k := range labels {
		fields = append(fields, "labels."+k)
	}
	if _, err := l.cs.Update(ctx, content.Info{Digest: id, Labels: labels}, fields...); err != nil {
		return images.Image{}, err
	}
	return images.Image{Name: name, Target: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: id, Size: int64(len(b))}}, nil
}

// manifest returns the manifest of the engine's image id (the image's ID
// is its manifest's digest) with every blob it names in the content
// store, copied from the engine the first time.
func (l *localImages) manifest(ctx context.Context, id digest.Digest) (ocispec.Manifest, []byte, error) {
	var man ocispec.Manifest
	for copied := false; ; copied = true {
		b, err := content.ReadBlob(ctx, l.cs, ocispec.Descriptor{Digest: id})
		if err == nil {
			if err := json.Unmarshal(b, &man); err != nil {
				return man, nil, fmt.Errorf("its manifest: %w", err)
			}
			want := []digest.Digest{man.Config.Digest}
			for _, d := range man.Layers {
				want = append(want, d.Digest)
			}
			if _, missing := l.sizes(ctx, want); !missing {
				return man, b, nil
			}
		}
		if copied {
			return man, nil, fmt.Errorf("the engine's archive lacks a blob of %s: %w", id, cerrdefs.ErrNotFound)
		}
		if err := l.copyBlobs(ctx, id.String()); err != nil {
			return man, nil, err
		}
	}
}

// gcLabels keep the manifest's blobs with it in the content store.
func gcLabels(man ocispec.Manifest) map[string]string {
	labels := map[string]string{"containerd.io/gc.ref.content.config": man.Config.Digest.String()}
	for i, l := range man.Layers {
		labels[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	return labels
}

// sizes returns the sizes of the blobs, and whether one is missing.
func (l *localImages) sizes(ctx context.Context, ds []digest.Digest) ([]int64, bool) {
	out := make([]int64, len(ds))
	for i, d := range ds {
		info, err := l.cs.Info(ctx, d)
		if err != nil {
			return nil, true
		}
		out[i] = info.Size
	}
	return out, false
}

// copyBlobs writes the blobs of the engine's save of image id into the
// content store, each checked against its digest.
func (l *localImages) copyBlobs(ctx context.Context, id string) error {
	rc, err := l.eng.saveImage(ctx, id)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		d, ok := blobDigest(hdr)
		if !ok {
			continue
		}
		if err := content.WriteBlob(ctx, l.cs, "hutch-blob-"+d.String(), tr, ocispec.Descriptor{Digest: d, Size: hdr.Size}); err != nil {
			return err
		}
	}
}

// blobDigest reads the digest a docker save archive names a blob by: an
// OCI layout's blobs/sha256/<hex>, or the docker-archive's <hex>.tar
// (an uncompressed layer, by its diff ID) and <hex>.json (the config).
// The content store checks each blob against it.
func blobDigest(hdr *tar.Header) (digest.Digest, bool) {
	if hdr.Typeflag != tar.TypeReg {
		return "", false
	}
	dir, file := path.Split(path.Clean(hdr.Name))
	switch {
	case path.Clean(dir) == "blobs/sha256":
	case dir == "" && (strings.HasSuffix(file, ".tar") || strings.HasSuffix(file, ".json")):
		file = strings.TrimSuffix(strings.TrimSuffix(file, ".tar"), ".json")
	default:
		return "", false
	}
	d := digest.NewDigestFromEncoded(digest.SHA256, file)
	return d, d.Validate() == nil
}

// List offers no image: BuildKit lists images only to keep their content
// from its pruning, and the engine's images are the engine's.
func (l *localImages) List(context.Context, ...string) ([]images.Image, error) {
	return nil, nil
}

// Create, Update and Delete are not for BuildKit: its image exporter runs
// with store=false, and the "moby" exporter loads into the engine.
func (l *localImages) Create(context.Context, images.Image) (images.Image, error) {
	return images.Image{}, fmt.Errorf("images are stored by the engine: %w", cerrdefs.ErrNotImplemented)
}

func (l *localImages) Update(context.Context, images.Image, ...string) (images.Image, error) {
	return images.Image{}, fmt.Errorf("images are stored by the engine: %w", cerrdefs.ErrNotImplemented)
}

func (l *localImages) Delete(context.Context, string, ...images.DeleteOpt) error {
	return fmt.Errorf("images are stored by the engine: %w", cerrdefs.ErrNotImplemented)
}
