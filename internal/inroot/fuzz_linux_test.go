package inroot

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzOpen plants a symlink with the fuzzer's target in a small tree and
// opens the fuzzer's name with the fuzzer's flags, scope and lookup
// (openat2 or the walk): whatever opens is under the root, nothing is
// made outside it, and the two lookups agree on what they open.
func FuzzOpen(f *testing.F) {
	f.Add("l/x", "/", uint8(0))
	f.Add("l/secret", "../outside", uint8(1))
	f.Add("d/../../outside/secret", "d", uint8(2))
	f.Add("l", "/proc/self/root/etc/passwd", uint8(3))
	f.Add("l/new", "../../../outside", uint8(5))
	f.Add("l/", "l", uint8(6))
	f.Add("d/./l/../d/f", "d/f/../..", uint8(7))
	f.Add("l", "000/", uint8(4))
	f.Add("l", "d/.", uint8(0))
	f.Fuzz(func(t *testing.T, name, target string, sel uint8) {
		if strings.IndexByte(name, 0) >= 0 || strings.IndexByte(target, 0) >= 0 || target == "" || len(name) > 512 || len(target) > 512 {
			return
		}
		tr := newTree(t)
		must(t, os.MkdirAll(filepath.Join(tr.root, "d"), 0o755))
		must(t, os.WriteFile(filepath.Join(tr.root, "d/f"), []byte("f"), 0o644))
		tr.link(t, "l", target)
		r := tr.open(t)
		flags := []int{unix.O_RDONLY, unix.O_PATH, unix.O_PATH | unix.O_NOFOLLOW, unix.O_DIRECTORY, unix.O_WRONLY | unix.O_CREAT}[int(sel)%5]
		scope := Scope(sel/5) % 3
		open := func() (int, unix.Stat_t, error) {
			var st unix.Stat_t
			fd, err := r.OpenFd(name, flags, 0o644, scope)
			if err == nil {
				inside(t, tr.root, fd, name)
				unix.Fstat(fd, &st)
				unix.Close(fd)
			}
			return fd, st, err
		}
		_, st1, err1 := open()
		forceWalk.Store(true)
		_, st2, err2 := open()
		forceWalk.Store(false)
		tr.unchanged(t)
		// With O_CREAT, the first open made what the second finds.
		switch {
		case err1 == nil && err2 == nil:
			if st1.Ino != st2.Ino || st1.Dev != st2.Dev {
				t.Errorf("%q (link %q, flags %#x, scope %d): openat2 and the walk opened different files", name, target, flags, scope)
			}
		case (err1 == nil) != (err2 == nil) && openat2Works():
			t.Errorf("%q (link %q, flags %#x, scope %d): openat2: %v; walk: %v", name, target, flags, scope, err1, err2)
		}
	})
}

// FuzzResolve checks that Resolve names a path in the root and that,
// when that path exists, opening name leads to the same file.
func FuzzResolve(f *testing.F) {
	f.Add("l/x/../y", "d/f/..")
	f.Add("../../l", "/d")
	f.Add("l", "l")
	f.Fuzz(func(t *testing.T, name, target string) {
		if strings.IndexByte(name, 0) >= 0 || strings.IndexByte(target, 0) >= 0 || target == "" || len(name) > 512 || len(target) > 512 {
			return
		}
		tr := newTree(t)
		must(t, os.MkdirAll(filepath.Join(tr.root, "d"), 0o755))
		tr.link(t, "l", target)
		r := tr.open(t)
		p, err := r.Resolve(name, InRoot)
		if err != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") {
			t.Fatalf("Resolve(%q) = %q", name, p)
		}
		var a, b unix.Stat_t
		fa, erra := r.OpenFd(name, unix.O_PATH, 0, InRoot)
		fb, errb := r.OpenFd(p, unix.O_PATH|unix.O_NOFOLLOW, 0, InRoot)
		if erra == nil && errb == nil {
			unix.Fstat(fa, &a)
			unix.Fstat(fb, &b)
			if a.Ino != b.Ino {
				t.Errorf("Resolve(%q) = %q, another file (fds %s, %s)", name, p, strconv.Itoa(fa), strconv.Itoa(fb))
			}
		}
		if erra == nil {
			unix.Close(fa)
		}
		if errb == nil {
			unix.Close(fb)
		}
	})
}
