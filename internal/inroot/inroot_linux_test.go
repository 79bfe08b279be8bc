package inroot

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Every way a name can try to leave the root lands inside it (InRoot) or
// is refused (Beneath): absolute symlinks, ".." chains, links to the
// host's paths, magic links, loops, dangling links.
func TestOpenStaysInRoot(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		tr.link(t, "abs", "/")
		tr.link(t, "abspasswd", "/etc/passwd")
		tr.link(t, "up", "../../../../../../../..")
		tr.link(t, "a/b/c", "../../../../outside/secret")
		tr.link(t, "host", tr.secret)
		tr.link(t, "hostdir", tr.outside)
		tr.link(t, "magic", "/proc/self/root")
		tr.link(t, "procpasswd", "/proc/self/root/etc/passwd")
		tr.link(t, "loop1", "loop2")
		tr.link(t, "loop2", "loop1")
		tr.link(t, "self", "self")
		tr.link(t, "dangling", "/no/such/file")
		tr.link(t, "rel", "etc/passwd")
		r := tr.open(t)
		for _, tt := range []struct {
			name  string
			want  string // the file's text; "" for an error
			errno error
		}{
			{name: "etc/passwd", want: "root:"},
			{name: "/etc/passwd", want: "root:"},
			{name: "../../../etc/passwd", want: "root:"},
			{name: "abs/etc/passwd", want: "root:"},
			{name: "abspasswd", want: "root:"},
			{name: "up/etc/passwd", want: "root:"},
			{name: "up/outside/secret", errno: unix.ENOENT},
			{name: "a/b/c", errno: unix.ENOENT},
			{name: "host", errno: unix.ENOENT},
			{name: "hostdir/secret", errno: unix.ENOENT},
			{name: "magic/etc/passwd", errno: unix.ENOENT},
			{name: "procpasswd", errno: unix.ENOENT},
			{name: "loop1", errno: unix.ELOOP},
			{name: "self/x", errno: unix.ELOOP},
			{name: "dangling", errno: unix.ENOENT},
			{name: "rel", want: "root:"},
			{name: "etc/passwd/", errno: unix.ENOTDIR},
			{name: "etc/passwd/x", errno: unix.ENOTDIR},
		} {
			f, err := r.Open(tt.name, unix.O_RDONLY, 0)
			if tt.want == "" {
				if err == nil {
					b, _ := io.ReadAll(f)
					f.Close()
					t.Errorf("%s: read %q, want %v", tt.name, b, tt.errno)
				} else if !errors.Is(err, tt.errno) {
					t.Errorf("%s: %v, want %v", tt.name, err, tt.errno)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
				continue
			}
			inside(t, tr.root, int(f.Fd()), tt.name)
			b, _ := io.ReadAll(f)
			f.Close()
			if !strings.HasPrefix(string(b), tt.want) {
				t.Errorf("%s: read %q, want %q", tt.name, b, tt.want)
			}
		}
		tr.unchanged(t)
	})
}

// Beneath refuses what InRoot would clamp: a ".." above the root, an
// absolute symlink, a relative one that climbs out; NoSymlinks refuses
// any symlink.
func TestBeneath(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		tr.link(t, "abs", "/")
		tr.link(t, "up", "..")
		tr.link(t, "good", "etc")
		tr.link(t, "a/b/c", "../../../outside")
		r := tr.open(t)
		for _, tt := range []struct {
			name  string
			scope Scope
			errno error
		}{
			{"etc/passwd", Beneath, nil},
			{"good/passwd", Beneath, nil},
			{"etc/../etc/passwd", Beneath, nil},
			{"..", Beneath, ErrEscape},
			{"../root/etc/passwd", Beneath, ErrEscape},
			{"abs", Beneath, ErrEscape},
			{"abs/etc/passwd", Beneath, ErrEscape},
			{"up/outside/secret", Beneath, ErrEscape},
			{"a/b/c/secret", Beneath, ErrEscape},
			{"etc/passwd", NoSymlinks, nil},
			{"good/passwd", NoSymlinks, unix.ELOOP},
			{"..", NoSymlinks, ErrEscape},
		} {
			fd, err := r.OpenFd(tt.name, unix.O_RDONLY, 0, tt.scope)
			if err == nil {
				inside(t, tr.root, fd, tt.name)
				unix.Close(fd)
			}
			if tt.errno == nil && err != nil || tt.errno != nil && !errors.Is(err, tt.errno) {
				t.Errorf("%s (scope %d): %v, want %v", tt.name, tt.scope, err, tt.errno)
			}
		}
		tr.unchanged(t)
	})
}

// Creating through a dangling symlink, or making directories through a
// link to a host path, makes them in the root, never on the host.
func TestCreateStaysInRoot(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		tr.link(t, "new", filepath.Join(tr.outside, "created"))
		tr.link(t, "newrel", "../../etc/created")
		tr.link(t, "dir", tr.outside)
		tr.link(t, "mk", "/made/here")
		tr.link(t, "mk2", "/made/elsewhere")
		r := tr.open(t)
		for _, name := range []string{"new", "newrel", "dir/created"} {
			f, err := r.Open(name, unix.O_WRONLY|unix.O_CREAT, 0o644)
			if err == nil {
				inside(t, tr.root, int(f.Fd()), name)
				f.Close()
			}
		}
		if f, err := r.Open("newrel", unix.O_WRONLY|unix.O_CREAT, 0o644); err != nil {
			t.Errorf("creating through a relative dangling link: %v", err)
		} else {
			f.Close()
			if _, err := os.Stat(filepath.Join(tr.root, "etc/created")); err != nil {
				t.Errorf("the link's target in the root: %v", err)
			}
		}
		fd, err := r.MkdirAll("dir/sub/deeper", 0o755, true)
		must(t, err)
		inside(t, tr.root, fd, "mkdir -p through a host link")
		unix.Close(fd)
		if _, err := os.Stat(filepath.Join(tr.root, tr.outside, "sub/deeper")); err != nil {
			t.Errorf("mkdir -p through a link: not made in the root: %v", err)
		}
		fd, err = r.MkdirAll("mk/x", 0o755, true)
		must(t, err)
		unix.Close(fd)
		if st, err := r.Lstat("/made/here/x"); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			t.Errorf("mkdir -p through a dangling link: %v", err)
		}
		// Without dangling, a link to a missing directory is an error.
		if _, err := r.MkdirAll("mk2/y", 0o755, false); !errors.Is(err, unix.ENOENT) {
			t.Errorf("mkdir -p through a dangling link, not asked to: %v", err)
		}
		fd, err = r.MkdirAll("dir/../etc/new/deeper", 0o755, false)
		must(t, err)
		inside(t, tr.root, fd, "mkdir -p one at a time")
		unix.Close(fd)
		if _, err := r.Open("etc/newdir/", unix.O_WRONLY|unix.O_CREAT, 0o644); !errors.Is(err, unix.EISDIR) {
			t.Errorf("creating a name ending in /: %v", err)
		}
		// O_EXCL never follows: an existing link is EEXIST.
		if _, err := r.Open("mk", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644); !errors.Is(err, unix.EEXIST) {
			t.Errorf("O_EXCL on a symlink: %v", err)
		}
		tr.unchanged(t)
	})
}

// Lstat, Readlink, RemoveAll and Rename act on the last element itself,
// never on what it links to; a hard link of an outside file is removed
// as a name, the file outside stays.
func TestLastElementNotFollowed(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		tr.link(t, "hostdir", tr.outside)
		tr.link(t, "abs", "/")
		must(t, os.Link(tr.secret, filepath.Join(tr.root, "hard")))
		r := tr.open(t)
		st, err := r.Lstat("hostdir")
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("lstat of a link: %o, %v", st.Mode, err)
		}
		if target, err := r.Readlink("hostdir"); err != nil || target != tr.outside {
			t.Errorf("readlink: %q, %v", target, err)
		}
		if _, err := r.Readlink("etc"); !errors.Is(err, unix.EINVAL) {
			t.Errorf("readlink of a directory: %v", err)
		}
		if _, err := r.Stat("hostdir"); !errors.Is(err, unix.ENOENT) {
			t.Errorf("stat through a host link: %v", err)
		}
		if st, err := r.Stat("abs"); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			t.Errorf("stat of a link to /: %v", err)
		}
		must(t, r.Rename("hostdir", "moved"))
		must(t, r.RemoveAll("moved"))
		must(t, r.RemoveAll("abs"))
		must(t, r.RemoveAll("hard"))
		must(t, r.RemoveAll("missing"))
		if err := r.RemoveAll("/"); err == nil {
			t.Error("removing the root itself")
		}
		if _, err := os.Lstat(filepath.Join(tr.root, "moved")); !os.IsNotExist(err) {
			t.Errorf("the link is still there: %v", err)
		}
		tr.unchanged(t)
		if _, err := os.Stat(filepath.Join(tr.root, "etc/passwd")); err != nil {
			t.Errorf("removing a link to / removed the root's files: %v", err)
		}
	})
}

// A root opened on /proc/self does not reach the host's files through
// its magic links.
func TestMagicLinks(t *testing.T) {
	modes(t, func(t *testing.T) {
		r, err := Open("/proc/self")
		must(t, err)
		defer r.Close()
		for _, name := range []string{"root/etc/passwd", "cwd", "exe", "fd/0", "root"} {
			f, err := r.Open(name, unix.O_RDONLY, 0)
			if err == nil {
				p, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
				f.Close()
				if !strings.HasPrefix(p, "/proc/") {
					t.Errorf("%s: opened %s through a magic link", name, p)
				}
			}
		}
	})
}

// Resolve evaluates every symlink in the root as far as the path exists.
func TestResolve(t *testing.T) {
	tr := newTree(t)
	tr.link(t, "abs", "/etc")
	tr.link(t, "rel", "etc/../etc")
	tr.link(t, "dangling", "/made/here")
	tr.link(t, "up", "../../..")
	tr.link(t, "loop", "loop")
	r := tr.open(t)
	for name, want := range map[string]string{
		"":                "/",
		"etc/passwd":      "/etc/passwd",
		"abs/passwd":      "/etc/passwd",
		"rel/x":           "/etc/x",
		"dangling/y":      "/made/here/y",
		"up/etc":          "/etc",
		"missing/../etc":  "/etc",
		"missing/a/../b":  "/missing/b",
		"/../../../abs":   "/etc",
		"etc/passwd/../x": "/etc/x",
	} {
		if got, err := r.Resolve(name, InRoot); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := r.Resolve("loop", InRoot); !errors.Is(err, unix.ELOOP) {
		t.Errorf("a loop: %v", err)
	}
}

// Walk visits everything under a directory, a directory before what it
// holds, and never descends a symlink, even one to a directory outside.
func TestWalk(t *testing.T) {
	tr := newTree(t)
	tr.link(t, "etc/host", tr.outside)
	tr.link(t, "etc/abs", "/")
	must(t, os.MkdirAll(filepath.Join(tr.root, "etc/d/e"), 0o755))
	must(t, os.WriteFile(filepath.Join(tr.root, "etc/d/e/f"), nil, 0o644))
	r := tr.open(t)
	var got []string
	must(t, r.Walk("/etc", func(dir int, name, rel string, st *unix.Stat_t) error {
		got = append(got, rel)
		return nil
	}))
	want := []string{"", "abs", "d", "d/e", "d/e/f", "host", "passwd"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("walked %q, want %q", got, want)
	}
	got = nil
	must(t, r.Walk("etc/host", func(dir int, name, rel string, st *unix.Stat_t) error {
		got = append(got, rel)
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("the walk's start followed: %o", st.Mode)
		}
		return nil
	}))
	if len(got) != 1 {
		t.Errorf("walking a link: %q", got)
	}
}

// Paths longer than the kernel takes, and trees deeper than PATH_MAX,
// are handled without leaving the root.
func TestLongPaths(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		r := tr.open(t)
		deep := strings.Repeat("d/", 1500) // 3000 bytes, 1500 levels
		fd, err := r.MkdirAll(deep, 0o755, true)
		must(t, err)
		unix.Close(fd)
		long := strings.Repeat(deep, 2) + "x"
		if _, err := r.MkdirAll(long, 0o755, true); err != nil && !errors.Is(err, unix.ENAMETOOLONG) {
			t.Errorf("a name longer than PATH_MAX: %v", err)
		}
		tr.link(t, "up", strings.Repeat("../", 1300))
		if f, err := r.Open("up/etc/passwd", unix.O_RDONLY, 0); err == nil {
			inside(t, tr.root, int(f.Fd()), "a long .. chain")
			f.Close()
		} else if !errors.Is(err, unix.ENAMETOOLONG) {
			t.Errorf("a long .. chain: %v", err)
		}
		if err := r.RemoveAll("d"); err == nil {
			t.Error("removing a tree deeper than MaxDepth: no error")
		}
		tr.unchanged(t)
	})
}
