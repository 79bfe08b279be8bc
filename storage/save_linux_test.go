package storage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// TestSaveLayout: docker save writes Docker's layout, an OCI image layout
// with manifest.json and repositories beside it, entries in Docker's
// order and dated 1970; an OCI reader finds every blob with the digest
// and size its descriptors state; the same images give the same bytes.
func TestSaveLayout(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(t, "", "")
	multi, err := testimage.MultiLayer(2)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "multi:latest", multi)
	_, configDigest, layerDigests := digests(t, multi)
	s := newStore(t, "")
	if _, err := s.Pull(ctx, ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	img, err := s.LookupImage(ctx, configDigest)
	if err != nil {
		t.Fatal(err)
	}
	var diffIDs []string
	for _, l := range img.Layers {
		diffIDs = append(diffIDs, l.DiffID.String())
	}
	if len(diffIDs) != len(layerDigests) {
		t.Fatalf("%d layers stored, %d pushed", len(diffIDs), len(layerDigests))
	}

	save := func(items ...imagestore.SaveImage) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := s.SaveImages(ctx, items, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	archive := save(imagestore.SaveImage{ID: configDigest, Names: []string{ref, "docker.io/library/mine:1"}})
	files := untarAll(t, archive)

	var names []string
	for _, f := range files {
		names = append(names, f.name)
		if !f.modTime.Equal(saveTime) {
			t.Errorf("%s dated %s", f.name, f.modTime)
		}
	}
	var blobs []string
	for _, d := range append(append([]string{configDigest}, diffIDs...), "") {
		if d != "" {
			blobs = append(blobs, "blobs/sha256/"+strings.TrimPrefix(d, "sha256:"))
		}
	}
	if len(names) != 2+len(blobs)+1+4 || names[0] != "blobs/" || names[1] != "blobs/sha256/" ||
		!slices.Equal(names[len(names)-4:], []string{"index.json", "manifest.json", "oci-layout", "repositories"}) ||
		!slices.IsSorted(names[2:len(names)-4]) {
		t.Fatalf("entries %q", names)
	}
	for _, b := range blobs {
		if !slices.Contains(names, b) {
			t.Errorf("no %s in %q", b, names)
		}
	}

	var index ocispec.Index
	if err := json.Unmarshal(files.get(t, "index.json"), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 2 || index.Manifests[0].Digest != index.Manifests[1].Digest || index.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("index.json = %+v", index)
	}
	// The image's ID names the manifest the archive holds, as in Docker's
	// containerd image store; the manifest names the config.
	if d := index.Manifests[0]; d.Digest.String() != img.ID || img.Descriptor == nil || d.Size != img.Descriptor.Size {
		t.Errorf("saved manifest %s (%d bytes), image %s %+v", d.Digest, d.Size, img.ID, img.Descriptor)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(files.get(t, "blobs/sha256/"+index.Manifests[0].Digest.Encoded()), &man); err != nil || man.Config.Digest.String() != configDigest {
		t.Errorf("saved manifest's config %s, %v", man.Config.Digest, err)
	}
	for i, want := range [][2]string{{ref, "latest"}, {"docker.io/library/mine:1", "1"}} {
		a := index.Manifests[i].Annotations
		if a["io.containerd.image.name"] != want[0] || a[ocispec.AnnotationRefName] != want[1] {
			t.Errorf("manifest %d annotations %v, want %v", i, a, want)
		}
	}
	var items []saveManifestItem
	if err := json.Unmarshal(files.get(t, "manifest.json"), &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Config != blobs[0] || !slices.Equal(items[0].Layers, blobs[1:]) ||
		!slices.Equal(items[0].RepoTags, []string{ref, "mine:1"}) {
		t.Errorf("manifest.json = %+v", items)
	}
	top := strings.TrimPrefix(diffIDs[len(diffIDs)-1], "sha256:")
	repo, _, _ := strings.Cut(ref, ":latest")
	if got, want := string(files.get(t, "repositories")), `{"`+repo+`":{"latest":"`+top+`"},"mine":{"1":"`+top+`"}}`+"\n"; got != want {
		t.Errorf("repositories = %s, want %s", got, want)
	}
	if got := string(files.get(t, "oci-layout")); got != `{"imageLayoutVersion": "1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}

	// An OCI reader: every descriptor's blob is there, of its size and
	// digest, the layers' diff IDs those of the config.
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if strings.HasSuffix(f.name, "/") {
			os.MkdirAll(p, 0o755)
			continue
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oci, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oci.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range m.Manifests {
		ociImg, err := oci.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		// The layers are uncompressed tars, which the reader's layer
		// validation would gunzip: their blobs are checked by hand.
		if err := validate.Image(ociImg, validate.Fast); err != nil {
			t.Errorf("OCI image %s: %v", desc.Digest, err)
		}
		man, err := ociImg.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ociImg.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range man.Layers {
			rc, err := layout.Path(dir).Blob(l.Digest)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(rc)
			rc.Close()
			if got := digest.FromBytes(data); got.String() != l.Digest.String() || int64(len(data)) != l.Size ||
				l.Digest != cfg.RootFS.DiffIDs[i] || string(l.MediaType) != ocispec.MediaTypeImageLayer {
				t.Errorf("layer %d: descriptor %+v, blob %s of %d bytes, diff ID %s", i, l, got, len(data), cfg.RootFS.DiffIDs[i])
			}
		}
	}

	if again := save(imagestore.SaveImage{ID: configDigest, Names: []string{ref, "docker.io/library/mine:1"}}); !bytes.Equal(again, archive) {
		t.Error("saving the same image twice gave different archives")
	}

	// By ID: one manifest, unnamed, no repositories.
	files = untarAll(t, save(imagestore.SaveImage{ID: configDigest}))
	index = ocispec.Index{}
	if err := json.Unmarshal(files.get(t, "index.json"), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || len(index.Manifests[0].Annotations) != 0 {
		t.Errorf("index.json of an unnamed save = %+v", index)
	}
	if got := string(files.get(t, "manifest.json")); !strings.Contains(got, `"RepoTags":null`) {
		t.Errorf("manifest.json of an unnamed save = %s", got)
	}
	if _, ok := files.find("repositories"); ok {
		t.Error("repositories in an unnamed save")
	}
}

type tarFile struct {
	name    string
	modTime time.Time
	data    []byte
}

type tarFiles []tarFile

func (fs tarFiles) find(name string) ([]byte, bool) {
	for _, f := range fs {
		if f.name == name {
			return f.data, true
		}
	}
	return nil, false
}

func (fs tarFiles) get(t *testing.T, name string) []byte {
	t.Helper()
	b, ok := fs.find(name)
	if !ok {
		t.Fatalf("no %s in the archive", name)
	}
	return b
}

func untarAll(t *testing.T, archive []byte) tarFiles {
	t.Helper()
	var out tarFiles
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarFile{name: h.Name, modTime: h.ModTime, data: b})
	}
}
