package volume

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

var root = os.Geteuid() == 0

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return st
}

// setTimes gives p, not followed, the access time at and modification
// time mt (seconds, with nanoseconds to see they are kept).
func setTimes(t *testing.T, p string, at, mt int64) {
	t.Helper()
	ts := []unix.Timespec{unix.NsecToTimespec(at*1e9 + 123), unix.NsecToTimespec(mt*1e9 + 456789)}
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// sameTree checks that dst reproduces src: every entry but sockets and
// devices, with type, mode, owner, mtime and content or link text.
func sameTree(t *testing.T, src, dst string) (n int) {
	t.Helper()
	must(t, filepath.WalkDir(src, func(p string, _ fs.DirEntry, err error) error {
		must(t, err)
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		q := filepath.Join(dst, rel)
		s := lstat(t, p)
		switch s.Mode & unix.S_IFMT {
		case unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
			if err := unix.Lstat(q, new(unix.Stat_t)); err != unix.ENOENT {
				t.Errorf("%s: want it skipped, lstat: %v", rel, err)
			}
			return nil
		}
		n++
		d := lstat(t, q)
		if s.Mode != d.Mode || s.Uid != d.Uid || s.Gid != d.Gid {
			t.Errorf("%s: mode %o %d:%d, want %o %d:%d", rel, d.Mode, d.Uid, d.Gid, s.Mode, s.Uid, s.Gid)
		}
		// Not atimes: copying reads the source, which then gets a new one.
		if s.Mtim != d.Mtim {
			t.Errorf("%s: mtime %v, want %v", rel, d.Mtim, s.Mtim)
		}
		switch s.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			a, err := os.ReadFile(p)
			must(t, err)
			b, err := os.ReadFile(q)
			must(t, err)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: content %q, want %q", rel, b, a)
			}
		case unix.S_IFLNK:
			a, err := os.Readlink(p)
			must(t, err)
			b, err := os.Readlink(q)
			must(t, err)
			if a != b {
				t.Errorf("%s: link to %q, want %q", rel, b, a)
			}
		}
		return nil
	}))
	return n
}

func TestCopyUpTree(t *testing.T) {
	rootfs := t.TempDir()
	src := filepath.Join(rootfs, "var/lib/data")
	must(t, os.MkdirAll(filepath.Join(src, "sub/deeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a.conf"), []byte("a=1\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(src, "sub/run"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "sub/deeper/empty"), nil, 0o644))
	must(t, os.Link(filepath.Join(src, "a.conf"), filepath.Join(src, "sub/hard")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(src, "abs")))
	must(t, os.Symlink("../a.conf", filepath.Join(src, "sub/rel")))
	must(t, os.Symlink("/", filepath.Join(src, "sub/slash"))) // never followed
	must(t, unix.Mkfifo(filepath.Join(src, "pipe"), 0o600))
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	must(t, err)
	l.Close() // the socket file stays
	if root {
		must(t, unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(t, os.Lchown(filepath.Join(src, "a.conf"), 1234, 5678))
		must(t, os.Lchown(filepath.Join(src, "abs"), 1234, 5678))
		must(t, os.Lchown(filepath.Join(src, "sub"), 1234, 5678))
		must(t, os.Lchown(src, 4321, 8765))
	}
	// After the chowns, which clear setuid and setgid.
	must(t, unix.Chmod(filepath.Join(src, "a.conf"), 0o640))
	must(t, unix.Chmod(filepath.Join(src, "sub/run"), 0o4755))
	must(t, unix.Chmod(filepath.Join(src, "pipe"), 0o620))
	must(t, unix.Chmod(filepath.Join(src, "sub/deeper"), 0o1777))
	must(t, unix.Chmod(filepath.Join(src, "sub"), 0o2550)) // read-only
	must(t, unix.Chmod(src, 0o751))
	for i, rel := range []string{"a.conf", "sub/run", "sub/deeper/empty", "abs", "sub/rel", "sub/slash", "pipe", "sub/deeper", "sub", "."} {
		setTimes(t, filepath.Join(src, rel), 1_000_000_000+int64(i), 1_500_000_000+int64(i))
	}

	dir := t.TempDir()
	must(t, CopyUp(rootfs, "/var/lib/data", dir))
	t.Cleanup(func() { // sub is read-only, in the way of RemoveAll without root
		os.Chmod(filepath.Join(src, "sub"), 0o755)
		os.Chmod(filepath.Join(dir, "sub"), 0o755)
	})
	// Before sameTree reads it.
	if a := lstat(t, filepath.Join(dir, "a.conf")).Atim; a != unix.NsecToTimespec(1_000_000_000*1e9+123) {
		t.Errorf("a.conf: atime %v, want the source's", a)
	}

	if n := sameTree(t, src, dir); n != 10 {
		t.Errorf("compared %d entries, want 10", n)
	}
	// The volume takes the directory's mode, owner and mtime.
	s, d := lstat(t, src), lstat(t, dir)
	if d.Mode != s.Mode || d.Uid != s.Uid || d.Gid != s.Gid || d.Mtim != s.Mtim {
		t.Errorf("volume: mode %o %d:%d mtime %v, want %o %d:%d %v", d.Mode, d.Uid, d.Gid, d.Mtim, s.Mode, s.Uid, s.Gid, s.Mtim)
	}
	if root && (d.Uid != 4321 || d.Gid != 8765) {
		t.Errorf("volume owned by %d:%d, want 4321:8765", d.Uid, d.Gid)
	}
	if a := lstat(t, filepath.Join(dir, "a.conf")); root && (a.Uid != 1234 || a.Gid != 5678) {
		t.Errorf("a.conf owned by %d:%d, want 1234:5678", a.Uid, a.Gid)
	}
	if h := lstat(t, filepath.Join(dir, "sub/hard")); h.Nlink != 1 {
		t.Errorf("sub/hard has %d links, want an independent file", h.Nlink)
	}
}

func TestCopyUpNotEmpty(t *testing.T) {
	rootfs := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(rootfs, "data"), 0o700))
	must(t, os.WriteFile(filepath.Join(rootfs, "data/image"), nil, 0o644))
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "mine"), nil, 0o644))
	must(t, CopyUp(rootfs, "/data", dir))
	if got := names(t, dir); len(got) != 1 || got[0] != "mine" {
		t.Errorf("volume has %v, want [mine]", got)
	}
	if m := lstat(t, dir).Mode & 0o7777; m != 0o755 {
		t.Errorf("volume mode %o, want 755 (untouched)", m)
	}
}

func TestCopyUpNoSource(t *testing.T) {
	rootfs := t.TempDir()
	must(t, os.WriteFile(filepath.Join(rootfs, "file"), []byte("x"), 0o600))
	must(t, os.Symlink("/nowhere", filepath.Join(rootfs, "dangling")))
	for _, target := range []string{"/missing", "/missing/deeper", "/file", "/file/under", "/dangling"} {
		dir := t.TempDir()
		must(t, os.Chmod(dir, 0o755))
		if err := CopyUp(rootfs, target, dir); err != nil {
			t.Errorf("%s: %v", target, err)
		}
		if got := names(t, dir); len(got) != 0 {
			t.Errorf("%s: volume has %v, want nothing", target, got)
		}
		if m := lstat(t, dir).Mode & 0o7777; m != 0o755 {
			t.Errorf("%s: volume mode %o, want 755 (untouched)", target, m)
		}
	}
}

func TestCopyUpStaysInRoot(t *testing.T) {
	rootfs := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755))
	must(t, os.WriteFile(filepath.Join(rootfs, "etc/marker"), []byte("image"), 0o644))
	must(t, os.Symlink("/", filepath.Join(rootfs, "slash")))
	must(t, os.Symlink("../../../../../..", filepath.Join(rootfs, "up")))
	must(t, os.Symlink("/etc", filepath.Join(rootfs, "conf")))
	for _, target := range []string{"/slash/etc", "/up/etc", "/up/up/../../etc", "/../../etc", "/conf", "/conf/"} {
		dir := t.TempDir()
		must(t, CopyUp(rootfs, target, dir))
		if got := names(t, dir); len(got) != 1 || got[0] != "marker" {
			t.Errorf("%s: volume has %v, want the image's [marker]", target, got)
		}
	}
}

func TestCopyUpNoVolume(t *testing.T) {
	err := CopyUp(t.TempDir(), "/", filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}
