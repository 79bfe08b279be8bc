package storage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/archive"
)

// TestPullStreamRefusesBadBlobs serves a last layer that does not match
// the manifest or the config. The layer is extracted while it downloads
// and found wrong only at its end: the pull must fail and leave no image,
// no layer and no staging directory.
func TestPullStreamRefusesBadBlobs(t *testing.T) {
	multi, err := testimage.MultiLayer(3)
	if err != nil {
		t.Fatal(err)
	}
	var blob bytes.Buffer
	if err := testimage.LayerFile(multi, -1, &blob); err != nil {
		t.Fatal(err)
	}
	good := blob.Bytes()
	recompressed := func() []byte {
		zr, err := gzip.NewReader(bytes.NewReader(good))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		if _, err := io.Copy(zw, zr); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		return out.Bytes()
	}()
	// The gzip header's MTIME does not change the content: same size,
	// same layer, other digest.
	sameSize := bytes.Clone(good)
	sameSize[4] ^= 0xff

	wrongDiffID, err := withDiffID(multi, -1, digest.FromString("not the layer"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		img  v1.Image
		fake []byte // served for the last layer instead of its blob
		want string
	}{
		{"same size other digest", multi, sameSize, "does not match its digest"},
		{"recompressed", multi, recompressed, "manifest says"},
		{"truncated", multi, good[:len(good)/2], "unexpected EOF"},
		{"diff ID of the config", wrongDiffID, nil, "don't match image configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newRegistry(t, "", "")
			ref := reg.push(t, "multi:bad", tt.img)
			_, _, layers := digests(t, tt.img)
			if tt.fake != nil {
				reg.fakeBlob(layers[len(layers)-1], tt.fake)
			}
			s := newStore(t, "")
			if !s.canStage() {
				t.Fatalf("driver %s: layers are not streamed here, the test proves nothing", s.Driver())
			}
			_, lines, err := pullLines(t, s, ref, PullOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("pull = %v, want an error with %q\n%s", err, tt.want, strings.Join(lines, "\n"))
			}
			assertEmpty(t, s)
			if names, err := os.ReadDir(filepath.Join(s.GraphRoot(), "overlay", "staging")); err == nil && len(names) > 0 {
				t.Errorf("staging directories left: %v", names)
			}
		})
	}
}

// withDiffID returns img with the DiffID of layer i replaced in its config.
func withDiffID(img v1.Image, i int, d digest.Digest) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	if i < 0 {
		i += len(cf.RootFS.DiffIDs)
	}
	h, err := v1.NewHash(d.String())
	if err != nil {
		return nil, err
	}
	cf.RootFS.DiffIDs[i] = h
	return mutate.ConfigFile(img, cf)
}

// TestPullStreamedLayersReassemble checks the records of streamed layers:
// the blob and content digests, and tar-split metadata from which the
// store rebuilds each layer's exact archive (what save and push send).
func TestPullStreamedLayersReassemble(t *testing.T) {
	reg := newRegistry(t, "", "")
	multi, err := testimage.MultiLayer(3)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "multi:latest", multi)
	_, _, blobs := digests(t, multi)
	cf, err := multi.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, "")
	if !s.canStage() {
		t.Fatalf("driver %s: layers are not streamed here", s.Driver())
	}
	if _, _, err := pullLines(t, s, ref, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	parent := ""
	for i, diffID := range cf.RootFS.DiffIDs {
		id := chainID(parent, digest.Digest(diffID.String()))
		parent = id
		l, err := s.Backend().Layer(id)
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		if l.CompressedDigest.String() != blobs[i] || l.UncompressedDigest.String() != diffID.String() {
			t.Errorf("layer %d records blob %s content %s, want %s %s", i, l.CompressedDigest, l.UncompressedDigest, blobs[i], diffID)
		}
		uncompressed := archive.Uncompressed
		rc, err := s.Backend().Diff("", id, &cstorage.DiffOptions{Compression: &uncompressed})
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := digest.NewDigest(digest.SHA256, h); got.String() != diffID.String() || n != l.UncompressedSize {
			t.Errorf("layer %d reassembles to %s (%d bytes), want %s (%d bytes)", i, got, n, diffID, l.UncompressedSize)
		}
	}
}

// TestOpenPrunesStaging: a daemon killed during a pull leaves a staging
// directory; the next Open removes it.
func TestOpenPrunesStaging(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, "graph", "overlay", "staging", "123", "dir", "usr")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Options{GraphRoot: dir + "/graph", RunRoot: dir + "/run", SingleUID: singleUID(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Dir(filepath.Dir(left))); !os.IsNotExist(err) {
		t.Errorf("staging directory after Open: %v", err)
	}
}

// stallingReader serves data, then blocks until release is closed, as a
// registry that stops sending does. It closes blocked, if set, when it
// starts to block.
type stallingReader struct {
	data    []byte
	release chan struct{}
	blocked chan struct{}
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		if r.blocked != nil {
			close(r.blocked)
			r.blocked = nil
		}
		<-r.release
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestStreamFailsWhileRegistryStalls: an extraction that fails on a bad
// entry returns its error while the decompressor still waits on the
// registry (stageLayer then cancels the request), instead of waiting for
// the registry to send again.
func TestStreamFailsWhileRegistryStalls(t *testing.T) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.Flush()
	raw.Write(bytes.Repeat([]byte{0xee}, 512)) // not a header
	noise := make([]byte, 4<<20)
	rand.Read(noise)
	raw.Write(noise)
	var blob bytes.Buffer
	zw := gzip.NewWriter(&blob)
	zw.Write(raw.Bytes())
	zw.Close()

	release := make(chan struct{})
	defer close(release)
	d := &streamDiffer{
		blob:   types.BlobInfo{Digest: digest.FromBytes(blob.Bytes()), Size: int64(blob.Len())},
		diffID: digest.FromBytes(raw.Bytes()),
		body:   &stallingReader{data: blob.Bytes()[:blob.Len()/2], release: release},
	}
	ts, err := os.CreateTemp(t.TempDir(), "tar-split-")
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	done := make(chan error, 1)
	go func() {
		_, _, err := d.extract(t.TempDir(), &archive.TarOptions{IgnoreChownErrors: singleUID(t)}, ts)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "header") {
			t.Fatalf("extract = %v, want an invalid header", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the extraction did not return while the registry stalled")
	}
}
