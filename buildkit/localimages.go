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
	// targets are the indexes the engine's saves wrote for its
	// multi-platform images, by image ID.
	targets map[digest.Digest]ocispec.Descriptor
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
	target, err := l.target(ctx, id)
	if err != nil {
		return images.Image{}, fmt.Errorf("copying image %s from the engine: %w", name, err)
	}
	if err := l.keep(ctx, target); err != nil {
		return images.Image{}, err
	}
	return images.Image{Name: name, Target: target}, nil
}

// target returns what the engine's image id is in the content store,
// every blob present: the manifest its ID names, or for a multi-platform
// image the index the engine's save writes for it. The blobs are copied
// from the engine the first time.
func (l *localImages) target(ctx context.Context, id digest.Digest) (ocispec.Descriptor, error) {
	for copied := false; ; copied = true {
		d, ok := l.targets[id]
		if !ok {
			d = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: id}
		}
		if d, ok := l.complete(ctx, d); ok {
			return d, nil
		}
		if copied {
			return d, fmt.Errorf("the engine's archive lacks a blob of %s: %w", id, cerrdefs.ErrNotFound)
		}
		top, err := l.copyBlobs(ctx, id.String())
		if err != nil {
			return d, err
		}
		if top.Digest != "" && top.Digest != id {
			if l.targets == nil {
				l.targets = map[digest.Digest]ocispec.Descriptor{}
			}
			l.targets[id] = ocispec.Descriptor{MediaType: top.MediaType, Digest: top.Digest, Size: top.Size}
		}
	}
}

// complete reports whether every blob d reaches is in the content store;
// it returns d with its size.
func (l *localImages) complete(ctx context.Context, d ocispec.Descriptor) (ocispec.Descriptor, bool) {
	info, err := l.cs.Info(ctx, d.Digest)
	if err != nil {
		return d, false
	}
	d.Size = info.Size
	b, err := content.ReadBlob(ctx, l.cs, d)
	if err != nil {
		return d, false
	}
	if images.IsIndexType(d.MediaType) {
		var idx ocispec.Index
		if json.Unmarshal(b, &idx) != nil {
			return d, false
		}
		for _, m := range idx.Manifests {
			if _, ok := l.complete(ctx, m); !ok {
				return d, false
			}
		}
		return d, true
	}
	var man ocispec.Manifest
	if json.Unmarshal(b, &man) != nil {
		return d, false
	}
	want := []digest.Digest{man.Config.Digest}
	for _, ld := range man.Layers {
		want = append(want, ld.Digest)
	}
	_, missing := l.sizes(ctx, want)
	return d, !missing
}

// keep labels d's blobs so that BuildKit's pruning keeps them with it.
func (l *localImages) keep(ctx context.Context, d ocispec.Descriptor) error {
	b, err := content.ReadBlob(ctx, l.cs, d)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	if images.IsIndexType(d.MediaType) {
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return err
		}
		for i, m := range idx.Manifests {
			labels[fmt.Sprintf("containerd.io/gc.ref.content.m.%d", i)] = m.Digest.String()
			if err := l.keep(ctx, m); err != nil {
				return err
			}
		}
	} else {
		var man ocispec.Manifest
		if err := json.Unmarshal(b, &man); err != nil {
			return err
		}
		labels = gcLabels(man)
	}
	fields := make([]string, 0, len(labels))
	for k := range labels {
		fields = append(fields, "labels."+k)
	}
	_, err = l.cs.Update(ctx, content.Info{Digest: d.Digest, Labels: labels}, fields...)
	return err
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
// content store, each checked against its digest, and returns the first
// image the archive's index.json names.
func (l *localImages) copyBlobs(ctx context.Context, id string) (ocispec.Descriptor, error) {
	var top ocispec.Descriptor
	rc, err := l.eng.saveImage(ctx, id)
	if err != nil {
		return top, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return top, nil
		}
		if err != nil {
			return top, err
		}
		if path.Clean(hdr.Name) == "index.json" {
			var idx ocispec.Index
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&idx); err != nil {
				return top, fmt.Errorf("index.json: %w", err)
			}
			if len(idx.Manifests) > 0 {
				top = idx.Manifests[0]
			}
			continue
		}
		d, ok := blobDigest(hdr)
		if !ok {
			continue
		}
		if err := content.WriteBlob(ctx, l.cs, "hutch-blob-"+d.String(), tr, ocispec.Descriptor{Digest: d, Size: hdr.Size}); err != nil {
			return top, err
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
