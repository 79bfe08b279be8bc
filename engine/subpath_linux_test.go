package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/archive"
	"github.com/hutch-engine/hutch/engine/volume"
)

// A subpath resolves inside its volume or image as Docker's safepath
// joins them: relative links that stay inside are followed; "..", or a
// link, that leads out is refused, as is a path that is not there, each
// with Docker's words and class.
func TestOpenSubpath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "vol")
	must(t, os.MkdirAll(filepath.Join(root, "subdir"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "hack"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "subdir/hello.txt"), []byte("world"), 0o644))
	for link, target := range map[string]string{
		"hack/good": "../subdir",
		"hack/root": "/",
		"hack/bad":  "root",
		"hack/up":   "../..",
		"hack/abs":  "/subdir",
		"hack/loop": "loop",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	r, err := archive.Open(root)
	must(t, err)
	defer r.Close()
	for _, tt := range []struct {
		sub   string
		class error
		text  string
	}{
		{sub: "subdir"},
		{sub: "hack/good"},
		{sub: "hack/good/hello.txt"},
		{sub: ""},
		{sub: "hack/root", class: errdefs.ErrInvalidArgument, text: "path concatenation escapes the base directory, base: " + root + ", subpath: hack/root"},
		{sub: "hack/bad", class: errdefs.ErrInvalidArgument, text: "path concatenation escapes the base directory"},
		{sub: "hack/up", class: errdefs.ErrInvalidArgument, text: "path concatenation escapes the base directory"},
		{sub: "hack/abs", class: errdefs.ErrInvalidArgument, text: "path concatenation escapes the base directory"},
		{sub: "../vol/subdir", class: errdefs.ErrInvalidArgument, text: "path concatenation escapes the base directory"},
		{sub: "nope", class: errdefs.ErrNotFound, text: "cannot access path " + filepath.Join(root, "nope") + ": no such file or directory"},
		{sub: "hack/loop", class: errdefs.ErrNotFound, text: "cannot access path "},
		{sub: "subdir/hello.txt/x", class: errdefs.ErrNotFound, text: "cannot access path "},
	} {
		fd, err := openSubpath(r, tt.sub, unix.O_PATH)
		if tt.class == nil {
			if err != nil {
				t.Errorf("%q: %v", tt.sub, err)
				continue
			}
			unix.Close(fd)
			continue
		}
		if err == nil {
			unix.Close(fd)
			t.Errorf("%q: opened, want %v", tt.sub, tt.class)
			continue
		}
		if !errors.Is(err, tt.class) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%q: %v, want %v containing %q", tt.sub, err, tt.class, tt.text)
		}
	}
}

// A volume mounted with a subpath over a directory of the image is filled
// from the image in that subpath (when it is empty), as Docker does: the
// rest of the volume, which is not empty, does not stop it.
func TestCopyUpIntoSubpath(t *testing.T) {
	base := t.TempDir()
	rootfs, vol := filepath.Join(base, "rootfs"), filepath.Join(base, "vol")
	must(t, os.MkdirAll(filepath.Join(rootfs, "bin"), 0o711))
	must(t, os.Chmod(filepath.Join(rootfs, "bin"), 0o711))
	must(t, os.WriteFile(filepath.Join(rootfs, "bin/busybox"), []byte("bb"), 0o755))
	owner := os.Getuid()
	if owner == 0 {
		// The subpath's directory takes the image directory's owner too.
		owner = 1234
		must(t, os.Chown(filepath.Join(rootfs, "bin"), owner, owner))
	}
	must(t, os.MkdirAll(filepath.Join(vol, "bin"), 0o700))
	must(t, os.WriteFile(filepath.Join(vol, "other"), []byte("x"), 0o644))
	dir, done, err := openSubpathDir(vol, "bin")
	must(t, err)
	defer done()
	must(t, volume.CopyUp(rootfs, "/bin", dir))
	if b, err := os.ReadFile(filepath.Join(vol, "bin/busybox")); err != nil || string(b) != "bb" {
		t.Errorf("bin/busybox in the volume: %q, %v", b, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(vol, "bin"), &st); err != nil || st.Mode&0o7777 != 0o711 || int(st.Uid) != owner {
		t.Errorf("the subpath takes the image directory's mode and owner: %o, %d, %v", st.Mode&0o7777, st.Uid, err)
	}
	if _, _, err := openSubpathDir(vol, "other"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a file as the subpath of a copy: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
