package storage

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/archive"
)

// TestPutStaged: the layers load, import and commit hand to PutLayer are
// extracted in process (staged), compressed or not, recorded with their
// digests, reassemble to their tar, and a layer whose content is not the
// one announced is refused and leaves nothing.
func TestPutStaged(t *testing.T) {
	s := newStore(t, "")
	if !s.canStage() {
		t.Fatalf("driver %s: layers are not staged here", s.Driver())
	}
	staged := 0
	h := &hookedStore{Store: s.cs, locks: &s.layerLocks, stage: func(id, parent string, opts *cstorage.LayerOptions, diff io.Reader) (*cstorage.Layer, int64, bool, error) {
		l, n, handled, err := s.putStaged(id, parent, opts, diff)
		if handled {
			staged++
		}
		return l, n, handled, err
	}}
	plain, gz := rootfsTar(t, false), rootfsTar(t, true)
	diffID := digest.FromBytes(plain)
	for _, tc := range []struct {
		name  string
		blob  []byte
		id    string
		opts  *cstorage.LayerOptions
		wrong bool
	}{
		{"plain", plain, "layer-plain", &cstorage.LayerOptions{OriginalDigest: diffID, UncompressedDigest: diffID}, false},
		{"gzip", gz, "layer-gzip", &cstorage.LayerOptions{OriginalDigest: digest.FromBytes(gz)}, false},
		{"no digests", plain, "layer-bare", nil, false},
		{"wrong diff ID", plain, "layer-wrong", &cstorage.LayerOptions{UncompressedDigest: digest.FromString("other")}, true},
		{"wrong digest", gz, "layer-wrong2", &cstorage.LayerOptions{OriginalDigest: digest.FromString("other")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layer, _, err := h.PutLayer(tc.id, "", nil, "", false, tc.opts, bytes.NewReader(tc.blob))
			if tc.wrong {
				if err == nil {
					t.Fatal("a layer of other content was stored")
				}
				if _, lerr := s.cs.Layer(tc.id); lerr == nil {
					t.Error("the refused layer exists")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if layer.UncompressedDigest != diffID || layer.CompressedDigest != digest.FromBytes(tc.blob) {
				t.Errorf("layer records content %s blob %s, want %s %s", layer.UncompressedDigest, layer.CompressedDigest, diffID, digest.FromBytes(tc.blob))
			}
			uncompressed := archive.Uncompressed
			rc, err := s.cs.Diff("", tc.id, &cstorage.DiffOptions{Compression: &uncompressed})
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.New()
			_, err = io.Copy(sum, rc)
			rc.Close()
			if err != nil || digest.NewDigest(digest.SHA256, sum) != diffID {
				t.Errorf("the layer reassembles to %s (%v), want %s", digest.NewDigest(digest.SHA256, sum), err, diffID)
			}
		})
	}
	if staged != 5 {
		t.Errorf("%d of 5 layers staged", staged)
	}
	if created := h.createdLayers(); len(created) != 3 {
		t.Errorf("created layers %q, want the three stored", created)
	}
}
