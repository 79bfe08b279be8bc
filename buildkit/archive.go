package buildkit

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/distribution/reference"
	"github.com/moby/go-archive/compression"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// load streams the image of man to the engine as a docker-archive
// (manifest.json, the config, one uncompressed tar per layer, named by
// their digests), tagged names.
func (e *exporter) load(ctx context.Context, man *ocispec.Manifest, names []string) error {
	cfg, err := content.ReadBlob(ctx, e.cs, man.Config)
	if err != nil {
		return err
	}
	var img ocispec.Image
	if err := json.Unmarshal(cfg, &img); err != nil {
		return fmt.Errorf("image config: %w", err)
	}
	if len(img.RootFS.DiffIDs) != len(man.Layers) {
		return fmt.Errorf("image config names %d layers, its manifest %d", len(img.RootFS.DiffIDs), len(man.Layers))
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: man.Config.Digest.Encoded() + ".json", RepoTags: names}
	for _, d := range img.RootFS.DiffIDs {
		entry.Layers = append(entry.Layers, d.Encoded()+".tar")
	}
	index, err := json.Marshal([]any{entry})
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(e.writeArchive(ctx, pw, index, entry.Config, cfg, man.Layers, entry.Layers))
	}()
	err = e.eng.loadImage(ctx, pr)
	_ = pr.CloseWithError(io.ErrClosedPipe)
	return err
}

func (e *exporter) writeArchive(ctx context.Context, w io.Writer, index []byte, cfgName string, cfg []byte, layers []ocispec.Descriptor, layerNames []string) error {
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"manifest.json", index}, {cfgName, cfg}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.b); err != nil {
			return err
		}
	}
	for i, l := range layers {
		if err := e.writeLayer(ctx, tw, layerNames[i], l); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return tw.Close()
}

// writeLayer writes layer l uncompressed as entry name: straight from the
// content store when it is stored so, else through a temporary file (a
// tar entry's size comes before its bytes).
func (e *exporter) writeLayer(ctx context.Context, tw *tar.Writer, name string, l ocispec.Descriptor) error {
	ra, err := e.cs.ReaderAt(ctx, l)
	if err != nil {
		return err
	}
	defer ra.Close()
	r := io.Reader(content.NewReader(ra))
	size := l.Size
	if !uncompressedLayer(l.MediaType) {
		tmp, err := os.CreateTemp("", "hutch-layer-")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		dr, err := compression.DecompressStream(r)
		if err != nil {
			return err
		}
		size, err = io.Copy(tmp, dr)
		dr.Close()
		if err != nil {
			return err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		r = tmp
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, r, size)
	return err
}

func uncompressedLayer(mt string) bool {
	return mt == ocispec.MediaTypeImageLayer || mt == images.MediaTypeDockerSchema2Layer
}

// loadLayout streams the index top to the engine as an OCI image layout
// (oci-layout, index.json naming top once per name, and every blob the
// index reaches as the content store holds it), which the engine loads
// as one multi-platform image.
func (e *exporter) loadLayout(ctx context.Context, top ocispec.Descriptor, names []string) error {
	blobs, err := e.reach(ctx, top)
	if err != nil {
		return err
	}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for _, n := range names {
		d := ocispec.Descriptor{MediaType: top.MediaType, Digest: top.Digest, Size: top.Size,
			Annotations: map[string]string{"io.containerd.image.name": n}}
		if named, err := reference.ParseNormalizedNamed(n); err == nil {
			if tagged, ok := named.(reference.Tagged); ok {
				d.Annotations[ocispec.AnnotationRefName] = tagged.Tag()
			}
		}
		index.Manifests = append(index.Manifests, d)
	}
	if len(names) == 0 {
		index.Manifests = []ocispec.Descriptor{{MediaType: top.MediaType, Digest: top.Digest, Size: top.Size}}
	}
	ib, err := json.Marshal(index)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(e.writeLayout(ctx, pw, ib, blobs))
	}()
	err = e.eng.loadImage(ctx, pr)
	_ = pr.CloseWithError(io.ErrClosedPipe)
	return err
}

// reach lists the blobs desc reaches: itself, and for an index or a
// manifest what it names, each once.
func (e *exporter) reach(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	seen := map[string]bool{}
	var walk func(d ocispec.Descriptor) error
	walk = func(d ocispec.Descriptor) error {
		if seen[d.Digest.String()] {
			return nil
		}
		seen[d.Digest.String()] = true
		out = append(out, d)
		switch {
		case images.IsIndexType(d.MediaType):
			b, err := content.ReadBlob(ctx, e.cs, d)
			if err != nil {
				return err
			}
			var idx ocispec.Index
			if err := json.Unmarshal(b, &idx); err != nil {
				return fmt.Errorf("index %s: %w", d.Digest, err)
			}
			for _, m := range idx.Manifests {
				if err := walk(m); err != nil {
					return err
				}
			}
		case images.IsManifestType(d.MediaType):
			b, err := content.ReadBlob(ctx, e.cs, d)
			if err != nil {
				return err
			}
			var man ocispec.Manifest
			if err := json.Unmarshal(b, &man); err != nil {
				return fmt.Errorf("manifest %s: %w", d.Digest, err)
			}
			for _, c := range append([]ocispec.Descriptor{man.Config}, man.Layers...) {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(desc)
}

func (e *exporter) writeLayout(ctx context.Context, w io.Writer, index []byte, blobs []ocispec.Descriptor) error {
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		b    []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", index}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.b); err != nil {
			return err
		}
	}
	for _, d := range blobs {
		if err := e.writeBlob(ctx, tw, d); err != nil {
			return fmt.Errorf("blob %s: %w", d.Digest, err)
		}
	}
	return tw.Close()
}

// writeBlob writes blob d as the content store holds it.
func (e *exporter) writeBlob(ctx context.Context, tw *tar.Writer, d ocispec.Descriptor) error {
	ra, err := e.cs.ReaderAt(ctx, d)
	if err != nil {
		return err
	}
	defer ra.Close()
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/" + d.Digest.Algorithm().String() + "/" + d.Digest.Encoded(), Mode: 0o644, Size: ra.Size(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, content.NewReader(ra), ra.Size())
	return err
}
