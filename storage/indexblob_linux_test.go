package storage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

func statements() []testimage.Statement {
	return []testimage.Statement{
		{PredicateType: "https://slsa.dev/provenance/v0.2", Body: []byte(`{"predicateType":"https://slsa.dev/provenance/v0.2"}`)},
		{PredicateType: "https://spdx.dev/Document", Body: []byte(`{"predicateType":"https://spdx.dev/Document"}`)},
		// Larger than the 4 MiB a statement is kept up to.
		{PredicateType: "https://example.com/big", Body: bytes.Repeat([]byte("x"), 4<<20+1)},
	}
}

func TestIndexBlob(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, "")
	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	stmts := statements()
	var archive bytes.Buffer
	att, err := testimage.AttestedLayout(&archive, "docker.io/library/attested:latest", img, stmts...)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := s.LoadImages(ctx, &archive, imagestore.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := att.Index.String()
	if len(loaded) != 1 || loaded[0].ID != id || loaded[0].Unpack != nil {
		t.Fatalf("loaded %+v, want the index %s", loaded, id)
	}
	index, err := s.IndexBlob(ctx, id, att.Index)
	var idx ocispec.Index
	if err != nil || json.Unmarshal(index, &idx) != nil || len(idx.Manifests) != 2 || digest.FromBytes(index) != att.Index {
		t.Fatalf("index %s, %v", index, err)
	}
	man, err := s.IndexBlob(ctx, id, att.Attestation)
	if err != nil || digest.FromBytes(man) != att.Attestation {
		t.Fatalf("attestation manifest: %v", err)
	}
	for i, d := range att.Statements[:2] {
		if b, err := s.IndexBlob(ctx, id, d); err != nil || !bytes.Equal(b, stmts[i].Body) {
			t.Errorf("statement %d: %q, %v", i, b, err)
		}
	}
	// Not kept: a statement over 4 MiB, the platform's own manifest (the
	// image of its platform has it), anything else; every blob of an
	// image of one manifest.
	for _, d := range []digest.Digest{att.Statements[2], att.Manifest, digest.FromString("nothing")} {
		if _, err := s.IndexBlob(ctx, id, d); !errdefs.IsNotFound(err) {
			t.Errorf("IndexBlob(%s) = %v, want not found", d, err)
		}
	}
	lookup, err := s.LookupImage(ctx, "attested")
	if err != nil || len(lookup.Platforms) != 1 || lookup.Instance == nil {
		t.Fatalf("LookupImage = %+v, %v", lookup, err)
	}
	if _, err := s.IndexBlob(ctx, lookup.Instance.ID, att.Attestation); !errdefs.IsNotFound(err) {
		t.Errorf("IndexBlob of the platform's image = %v, want not found", err)
	}
	if _, err := s.IndexBlob(ctx, digest.FromString("no image").String(), att.Index); !errdefs.IsNotFound(err) || !strings.HasPrefix(err.Error(), "No such image") {
		t.Errorf("IndexBlob of no image = %v", err)
	}
}

// A platform whose layer does not unpack is left out of a loaded index,
// which Docker loads all the same; a layer the archive lacks fails the
// load and leaves nothing.
func TestLoadIndexUnpackFailure(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, "")
	bogus, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("layer"), types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := bogus.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = "linux", "amd64"
	if bogus, err = mutate.ConfigFile(bogus, cf); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	att, err := testimage.AttestedLayout(&archive, "docker.io/library/bogus:latest", bogus, statements()[:1]...)
	if err != nil {
		t.Fatal(err)
	}

	// The archive without the layer's blob.
	layer, err := bogus.Layers()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := layer[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	lacking := withoutEntry(t, archive.Bytes(), "blobs/sha256/"+ld.Hex)
	if _, err := s.LoadImages(ctx, bytes.NewReader(lacking), imagestore.LoadOptions{}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("load of an archive lacking a layer = %v", err)
	}
	assertEmpty(t, s)

	loaded, err := s.LoadImages(ctx, &archive, imagestore.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 1 || loaded[0].ID != att.Index.String() || loaded[0].Unpack == nil {
		t.Fatalf("loaded %+v", loaded)
	}
	img, err := s.LookupImage(ctx, "bogus")
	if err != nil || len(img.Platforms) != 1 || img.Platforms[0].Available || img.Instance != nil {
		t.Fatalf("LookupImage = %+v, %v", img, err)
	}
	if b, err := s.IndexBlob(ctx, img.ID, att.Statements[0]); err != nil || len(b) == 0 {
		t.Errorf("statement of the loaded index: %v", err)
	}
	if _, err := s.DeleteImage(ctx, img.ID); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, s)
}

// withoutEntry is the tar archive without its entry name.
func withoutEntry(t *testing.T, archive []byte, name string) []byte {
	t.Helper()
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(archive)), tar.NewWriter(&out)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == name {
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
