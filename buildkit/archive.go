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
	"github.com/moby/go-archive/compression"
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
