package storage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// rootfsTar is a small rootfs: the static busybox and a text file.
func rootfsTar(t testing.TB, gz bool) []byte {
	t.Helper()
	bin, err := os.ReadFile(testimage.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var w io.Writer = &buf
	zw := gzip.NewWriter(&buf)
	if gz {
		w = zw
	}
	tw := tar.NewWriter(w)
	files := []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, bin},
		{tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil},
		{tar.Header{Name: "etc/hello", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("hello\n")},
	}
	for _, f := range files {
		f.h.Size = int64(len(f.body))
		if err := tw.WriteHeader(&f.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz {
		zw.Close()
	}
	return buf.Bytes()
}

func TestImportImage(t *testing.T) {
	s := newStore(t, "")
	ctx := context.Background()
	cfg := imagestore.ImportConfig{Comment: "a comment", Image: dockerspec.DockerOCIImage{}}
	cfg.Image.Config.Cmd = []string{"/bin/busybox", "true"}
	cfg.Image.OS, cfg.Image.Architecture = "linux", "amd64"
	for _, gz := range []bool{false, true} {
		name := "docker.io/library/imported:plain"
		if gz {
			name = "docker.io/library/imported:gz"
		}
		t.Run(name, func(t *testing.T) {
			cfg.Comment = "a comment on " + name // a config of its own: an image of its own
			id, err := s.ImportImage(ctx, bytes.NewReader(rootfsTar(t, gz)), cfg, name)
			if err != nil {
				t.Fatal(err)
			}
			img, err := s.LookupImage(ctx, name)
			if err != nil || img.ID != id {
				t.Fatalf("LookupImage = %+v, %v (import said %s)", img, err, id)
			}
			if img.Comment != cfg.Comment || img.Config == nil || strings.Join(img.Config.Config.Cmd, " ") != "/bin/busybox true" ||
				len(img.Layers) != 1 || len(img.Config.RootFS.DiffIDs) != 1 || img.Layers[0].DiffID != img.Config.RootFS.DiffIDs[0] || img.Layers[0].Size <= 0 {
				t.Errorf("imported image = %+v", img)
			}
			if len(img.Refs) != 1 || img.Refs[0] != name || img.LastTagTime.IsZero() {
				t.Errorf("refs %q, last tag time %v", img.Refs, img.LastTagTime)
			}
			checkRootfsFile(t, s, id, "etc/hello")
		})
	}
	// The same rootfs twice shares the layer.
	imgs, _ := s.ListImages(ctx)
	if len(imgs) != 2 || imgs[0].Layers[0].ID != imgs[1].Layers[0].ID {
		t.Errorf("two imports of one rootfs: %+v", imgs)
	}
}

// No bytes at all are an empty rootfs, as Docker imports them.
func TestImportEmptyArchive(t *testing.T) {
	s := newStore(t, "")
	id, err := s.ImportImage(context.Background(), bytes.NewReader(nil), imagestore.ImportConfig{}, "docker.io/library/empty:1")
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := s.ListImages(context.Background())
	if err != nil || len(imgs) != 1 || imgs[0].ID != id || len(imgs[0].Layers) != 1 {
		t.Fatalf("images %+v, %v", imgs, err)
	}
}

func TestImportImageFailuresLeaveNothing(t *testing.T) {
	tests := []struct {
		name  string
		body  []byte
		class error
	}{
		{"not a tar", bytes.Repeat([]byte("garbage "), 200), errdefs.ErrInvalidArgument},
		{"truncated tar", rootfsTar(t, false)[:20000], errdefs.ErrInvalidArgument},
		{"truncated gzip", rootfsTar(t, true)[:20000], errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, "")
			_, err := s.ImportImage(context.Background(), bytes.NewReader(tc.body), imagestore.ImportConfig{}, "docker.io/library/x:1")
			if err == nil || (tc.class != nil && !errors.Is(err, tc.class)) {
				t.Errorf("ImportImage = %v, want %v", err, tc.class)
			}
			assertEmpty(t, s)
			if left, _ := filepath.Glob(filepath.Join(s.tmpDir, "*")); len(left) != 0 {
				t.Errorf("temporary files left: %q", left)
			}
		})
	}
}
