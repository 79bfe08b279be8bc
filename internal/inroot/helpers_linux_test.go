package inroot

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// modes runs f with openat2 (when the kernel has it) and with the
// user-space walk.
func modes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	t.Run("openat2", func(t *testing.T) {
		if !openat2Works() {
			// The walk below is what lookups use here: this half
			// checks that openat2 is indeed refused, as the probe said.
			how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT}
			if _, err := unix.Openat2(unix.AT_FDCWD, "/", &how); err != unix.ENOSYS && err != unix.EPERM {
				t.Fatalf("openat2 probed as missing, but answers %v", err)
			}
			return
		}
		f(t)
	})
	t.Run("walk", func(t *testing.T) {
		forceWalk.Store(true)
		defer forceWalk.Store(false)
		f(t)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tree is a root beside an outside directory holding a sentinel file.
type tree struct {
	base, root, outside, secret string
}

const secretText = "SECRET outside the root"

func newTree(t *testing.T) tree {
	t.Helper()
	base := t.TempDir()
	tr := tree{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	tr.secret = filepath.Join(tr.outside, "secret")
	must(t, os.MkdirAll(filepath.Join(tr.root, "etc"), 0o755))
	must(t, os.MkdirAll(tr.outside, 0o755))
	must(t, os.WriteFile(tr.secret, []byte(secretText), 0o644))
	must(t, os.WriteFile(filepath.Join(tr.root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644))
	return tr
}

func (tr tree) link(t *testing.T, name, target string) {
	t.Helper()
	p := filepath.Join(tr.root, name)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.Symlink(target, p))
}

func (tr tree) open(t *testing.T) *Root {
	t.Helper()
	r, err := Open(tr.root)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// inside fails t unless the open fd names a file under root, by the
// kernel's own account of its path.
func inside(t *testing.T, root string, fd int, what string) {
	t.Helper()
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	must(t, err)
	if p != root && !strings.HasPrefix(p, root+"/") {
		t.Errorf("%s: opened %s, outside %s", what, p, root)
	}
}

// unchanged fails t if the outside directory holds anything but the
// sentinel, with its text.
func (tr tree) unchanged(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(tr.outside)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != "secret" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("outside holds %v, want only the sentinel", names)
	}
	if b, err := os.ReadFile(tr.secret); err != nil || string(b) != secretText {
		t.Errorf("sentinel: %q, %v", b, err)
	}
}
