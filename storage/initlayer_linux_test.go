package storage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// layerTar is a rootfs of the static busybox and entries.
func layerTar(t *testing.T, entries ...tar.Header) []byte {
	t.Helper()
	bin, err := os.ReadFile(testimage.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	all := append([]tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
	}, entries...)
	for _, h := range all {
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Name == "bin/busybox" {
			if _, err := tw.Write(bin); err != nil {
				t.Fatal(err)
			}
		} else if h.Size > 0 {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInitLayer: the mount points every container gets are in the
// image's init layer, below the container's writable layer, which stays
// empty; a directory the image has keeps its attributes; entries under a
// symbolic link are left to the runtime; the layer goes with its image. A
// reset keeps the writable layer of a container that wrote nothing, also
// when it was mounted volatile (docker run --rm).
func TestInitLayer(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, DriverOverlay)
	type entry struct {
		path string
		dir  bool
		mode os.FileMode
		size int64
	}
	tests := []struct {
		name     string
		volatile bool
		entries  []tar.Header
		want     []entry // in the container's root
		absent   []string
	}{{
		name: "no etc, no proc",
		want: []entry{{"proc", true, 0o755, 0}, {"sys", true, 0o755, 0}, {"dev", true, 0o755, 0},
			{"etc", true, 0o755, 0}, {"etc/hosts", false, 0o644, 0}, {"etc/hostname", false, 0o644, 0}, {"etc/resolv.conf", false, 0o644, 0}},
	}, {
		name:     "etc of its own",
		volatile: true,
		entries: []tar.Header{
			{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o751},
			{Name: "etc/hosts", Typeflag: tar.TypeReg, Mode: 0o600, Size: 5},
			{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
			{Name: "proc/", Typeflag: tar.TypeDir, Mode: 0o555},
		},
		want: []entry{{"etc", true, 0o751, 0}, {"etc/hosts", false, 0o600, 5}, {"etc/passwd", false, 0o644, 3},
			{"etc/hostname", false, 0o644, 0}, {"proc", true, 0o555, 0}, {"sys", true, 0o755, 0}},
	}, {
		name: "etc is a symbolic link",
		entries: []tar.Header{
			{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "usr/etc/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/usr/etc"},
		},
		want:   []entry{{"proc", true, 0o755, 0}, {"usr/etc", true, 0o755, 0}},
		absent: []string{"usr/etc/hosts", "usr/etc/hostname"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			image, err := s.ImportImage(ctx, bytes.NewReader(layerTar(t, tc.entries...)), imagestore.ImportConfig{}, "")
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.CreateRootfs(ctx, "", image, tc.volatile)
			if err != nil {
				t.Fatal(err)
			}
			root, err := s.MountRootfs(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.want {
				fi, err := os.Lstat(filepath.Join(root, e.path))
				if err != nil {
					t.Errorf("%s: %v", e.path, err)
					continue
				}
				if fi.IsDir() != e.dir || fi.Mode().Perm() != e.mode || !e.dir && fi.Size() != e.size {
					t.Errorf("%s: %v, %d bytes; want dir %v, mode %v, %d bytes", e.path, fi.Mode(), fi.Size(), e.dir, e.mode, e.size)
				}
			}
			for _, p := range tc.absent {
				if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: made through a symbolic link (%v)", p, err)
				}
			}
			c, err := s.Backend().Container(id)
			if err != nil {
				t.Fatal(err)
			}
			layer, err := s.Backend().Layer(c.LayerID)
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(s.GraphRoot(), "overlay")
			upper := filepath.Join(home, c.LayerID, "diff")
			if names, err := readNames(upper); err != nil || len(names) != 0 {
				t.Errorf("writable layer holds %v (%v)", names, err)
			}
			initDir := filepath.Join(s.GraphRoot(), initLayersDir, layer.Parent)
			err = filepath.WalkDir(initDir, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				names, err := listXattrs(p)
				for _, n := range names {
					if strings.Contains(n, "overlay.") {
						t.Errorf("%s keeps overlay's attribute %s", p, n)
					}
				}
				return err
			})
			if err != nil {
				t.Error(err)
			}

			// A container that wrote nothing: its reset leaves the upper
			// directory as it is; one that wrote: made anew, empty.
			var before syscall.Stat_t
			if err := syscall.Stat(upper, &before); err != nil {
				t.Fatal(err)
			}
			if err := s.ResetRootfs(ctx, id); err != nil {
				t.Fatal(err)
			}
			var after syscall.Stat_t
			if err := syscall.Stat(upper, &after); err != nil || after.Ino != before.Ino {
				t.Errorf("pristine layer made anew (inode %d, was %d, %v)", after.Ino, before.Ino, err)
			}
			// overlay's work/work is left for the next mount to make, so
			// that its deletion is not on that mount's path.
			if _, err := os.Lstat(filepath.Join(filepath.Dir(upper), "work", "work")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("work/work after a reset: %v", err)
			}
			if root, err = s.MountRootfs(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "proc", "written"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.ResetRootfs(ctx, id); err != nil {
				t.Fatal(err)
			}
			if names, err := readNames(upper); err != nil || len(names) != 0 {
				t.Errorf("after a reset the writable layer holds %v (%v)", names, err)
			}
			if err := s.RemoveRootfs(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DeleteImage(ctx, image); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(initDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("init layer left after its image: %v", err)
			}
		})
	}
}

// TestSweepInitLayers: Open removes init layers whose image layer is gone
// and interrupted makes.
func TestSweepInitLayers(t *testing.T) {
	s := newStore(t, DriverOverlay)
	dir := filepath.Join(s.GraphRoot(), initLayersDir)
	for _, p := range []string{strings.Repeat("a", 64) + "/etc", ".tmp-123/diff"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.sweepInitLayers(); err != nil {
		t.Fatal(err)
	}
	if names, err := readNames(dir); err != nil || len(names) != 0 {
		t.Errorf("left: %v, %v", names, err)
	}
}
