package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

const secret = "host secret: never in an archive"

// sandbox makes base/root, the container's rootfs, beside base/outside,
// which holds a secret. The rootfs has links that point out of it by the
// host's rules, and the classic "/escape -> /../../../../etc".
func sandbox(t testing.TB) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/etc", root + "/tmp", root + "/home/user", outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644))
	for link, target := range map[string]string{
		"up":      "../outside",
		"abs":     outside,
		"outfile": filepath.Join(outside, "secret"),
		"escape":  "/../../../../etc",
		"shadow":  "/etc/shadow",
		"loop":    "loop",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
	return root, outside
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openRoot(t testing.TB, root string) *Root {
	t.Helper()
	r, err := Open(root)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// archive tars abs in r as ContainerArchivePath does.
func archive(t testing.TB, r *Root, abs string) (map[string]*tar.Header, map[string]string, error) {
	t.Helper()
	ent, st, err := r.Stat(abs)
	if err != nil {
		return nil, nil, err
	}
	defer ent.Close()
	var buf bytes.Buffer
	if err := r.WriteTar(&buf, ent, st.Name); err != nil {
		return nil, nil, err
	}
	hdrs, data := map[string]*tar.Header{}, map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, data, nil
		}
		must(t, err)
		b, _ := io.ReadAll(tr)
		hdrs[h.Name], data[h.Name] = h, string(b)
	}
}

func TestStatAndArchiveStayInRoot(t *testing.T) {
	root, _ := sandbox(t)
	r := openRoot(t, root)
	tests := []struct {
		path     string
		notFound bool
		notDir   bool     // a file named as a directory
		names    []string // entries expected in the archive
		content  string   // of the first name
		link     string   // the stat's LinkTarget
	}{
		{path: "/etc/passwd", names: []string{"passwd"}, content: "root:x:0:0:root:/root:/bin/sh\n"},
		{path: "etc/passwd", names: []string{"passwd"}, content: "root:x:0:0:root:/root:/bin/sh\n"},
		// The escape link resolves to the container's /etc.
		{path: "/escape/passwd", names: []string{"passwd"}, content: "root:x:0:0:root:/root:/bin/sh\n"},
		{path: "/../../etc/passwd", names: []string{"passwd"}, content: "root:x:0:0:root:/root:/bin/sh\n"},
		// Links out of the rootfs by the host's rules lead nowhere.
		{path: "/up/secret", notFound: true},
		{path: "/abs/secret", notFound: true},
		{path: "/up/", notFound: true},
		{path: "/etc/passwd/", notDir: true},
		{path: "/etc/passwd/x", notDir: true},
		// A final symlink is archived as a link, never followed.
		{path: "/outfile", names: []string{"outfile"}},
		{path: "/shadow", names: []string{"shadow"}, link: "/etc/shadow"},
		{path: "/escape", names: []string{"escape"}, link: "/etc"},
		{path: "/up", names: []string{"up"}, link: "/outside"},
		// Trailing "/" and "/." follow it, inside the rootfs.
		{path: "/escape/", names: []string{"escape/", "escape/passwd"}},
		{path: "/escape/.", names: []string{"./", "./passwd"}},
		{path: "escape/./", names: []string{"./", "./passwd"}},
		{path: "/nope", notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			hdrs, data, err := archive(t, r, ContainerPath(tc.path))
			if tc.notDir {
				err := FileError(err, tc.path, "c")
				if err == nil || err.Error() != "lstat "+tc.path+": not a directory" || errdefs.IsNotFound(err) {
					t.Fatalf("err = %v, want Docker's unclassed lstat error", err)
				}
				return
			}
			if tc.notFound {
				if err := FileError(err, tc.path, "c"); !errdefs.IsNotFound(err) {
					t.Fatalf("err = %v, want not found", err)
				}
				return
			}
			must(t, err)
			for _, n := range tc.names {
				if hdrs[n] == nil {
					t.Errorf("no Entry %q in %v", n, keys(hdrs))
				}
			}
			if len(hdrs) != len(tc.names) {
				t.Errorf("entries %v, want %v", keys(hdrs), tc.names)
			}
			if tc.content != "" && data[tc.names[0]] != tc.content {
				t.Errorf("content %q", data[tc.names[0]])
			}
			_, st, err := r.Stat(ContainerPath(tc.path))
			must(t, err)
			if st.LinkTarget != tc.link && tc.link != "" {
				t.Errorf("LinkTarget = %q, want %q", st.LinkTarget, tc.link)
			}
		})
	}
	// The whole rootfs: links stay links, nothing of the host comes along.
	_, data, err := archive(t, r, "/")
	must(t, err)
	for name, d := range data {
		if strings.Contains(d, "host secret") {
			t.Errorf("%s carries the host's secret", name)
		}
	}
	if _, _, err := archive(t, r, "/loop/"); !errors.Is(err, unix.ELOOP) {
		t.Errorf("symlink loop: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

type tarEntry struct {
	name, link, data string
	typ              byte
	mode             int64
}

func buildTar(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.data)),
			Uid: os.Getuid(), Gid: os.Getgid(), ModTime: time.Unix(1700000000, 0)}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		must(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := io.WriteString(tw, e.data)
			must(t, err)
		}
	}
	must(t, tw.Close())
	return buf.Bytes()
}

// untouched checks that the sandbox outside the rootfs is as sandbox left
// it.
func untouched(t testing.TB, root, outside string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(root))
	must(t, err)
	if len(ents) != 2 {
		t.Errorf("the sandbox holds %v", ents)
	}
	ents, err = os.ReadDir(outside)
	must(t, err)
	b, err := os.ReadFile(filepath.Join(outside, "secret"))
	if len(ents) != 1 || err != nil || string(b) != secret {
		t.Errorf("outside the rootfs changed: %v %v %q", ents, err, b)
	}
}

func TestExtractRefusesEscapes(t *testing.T) {
	tests := []struct {
		name    string
		dest    string
		entries []tarEntry
		invalid bool // refused with ErrInvalidArgument
		fails   bool // refused otherwise
		check   func(t *testing.T, root string)
	}{
		{name: "dot-dot name", dest: "/tmp", invalid: true,
			entries: []tarEntry{{name: "../../outside/pwned", typ: tar.TypeReg, data: "x"}}},
		{name: "dot-dot inside name", dest: "/tmp", invalid: true,
			entries: []tarEntry{{name: "a/../../b", typ: tar.TypeReg, data: "x"}}},
		{name: "absolute name lands in dest", dest: "/tmp",
			entries: []tarEntry{{name: "/etc/f", typ: tar.TypeReg, data: "x"}},
			check:   func(t *testing.T, root string) { exists(t, root, "tmp/etc/f") }},
		{name: "relative symlink above dest", dest: "/tmp", invalid: true,
			entries: []tarEntry{{name: "l", link: "../../outside", typ: tar.TypeSymlink}}},
		{name: "hard link above dest", dest: "/tmp", invalid: true,
			entries: []tarEntry{{name: "h", link: "../../outside/secret", typ: tar.TypeLink}}},
		{name: "absolute symlink then a file through it", dest: "/tmp",
			entries: []tarEntry{{name: "a", link: "/", typ: tar.TypeSymlink}, {name: "a/home/f", typ: tar.TypeReg, data: "in root"}},
			check:   func(t *testing.T, root string) { exists(t, root, "home/f") }},
		// Links to missing directories get them made, in the rootfs.
		{name: "through a host-relative link of the rootfs", dest: "/",
			entries: []tarEntry{{name: "up/pwned", typ: tar.TypeReg, data: "x"}},
			check:   func(t *testing.T, root string) { exists(t, root, "outside/pwned") }},
		{name: "through a host-absolute link of the rootfs", dest: "/",
			entries: []tarEntry{{name: "abs/pwned", typ: tar.TypeReg, data: "x"}},
			check: func(t *testing.T, root string) {
				link, _ := os.Readlink(filepath.Join(root, "abs"))
				exists(t, root, filepath.Join(link, "pwned"))
			}},
		{name: "through a symlink loop", dest: "/", fails: true,
			entries: []tarEntry{{name: "loop/x", typ: tar.TypeReg, data: "x"}}},
		{name: "over a link to a host file", dest: "/",
			entries: []tarEntry{{name: "outfile", typ: tar.TypeReg, data: "replaced"}},
			check:   func(t *testing.T, root string) { content(t, root, "outfile", "replaced") }},
		{name: "into the escape link", dest: "/escape",
			entries: []tarEntry{{name: "new", typ: tar.TypeReg, data: "x"}},
			check:   func(t *testing.T, root string) { exists(t, root, "etc/new") }},
		// Hard link targets are archive names, relative to dest.
		{name: "hard link through the escape link", dest: "/",
			entries: []tarEntry{{name: "tmp/h", link: "/escape/passwd", typ: tar.TypeLink}},
			check:   func(t *testing.T, root string) { content(t, root, "tmp/h", "root:x:0:0:root:/root:/bin/sh\n") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := sandbox(t)
			r := openRoot(t, root)
			dest, err := r.Directory(ContainerPath(tc.dest))
			must(t, err)
			err = r.Extract(dest, bytes.NewReader(buildTar(t, tc.entries...)), ExtractOptions{})
			switch {
			case tc.invalid && !errdefs.IsInvalidArgument(err):
				t.Errorf("err = %v, want invalid argument", err)
			case tc.fails && err == nil:
				t.Error("extraction succeeded")
			case !tc.invalid && !tc.fails && err != nil:
				t.Errorf("err = %v", err)
			}
			untouched(t, root, outside)
			if tc.check != nil {
				tc.check(t, root)
			}
		})
	}
}

func exists(t *testing.T, root, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
		t.Error(err)
	}
}

func content(t *testing.T, root, name, want string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q", name, b, err, want)
	}
}

func TestExtractOverwrite(t *testing.T) {
	tests := []struct {
		name        string
		noOverwrite bool
		Entry       tarEntry
		invalid     bool
		isDir       bool
	}{
		{name: "file over dir", Entry: tarEntry{name: "home", typ: tar.TypeReg, data: "x"}},
		{name: "file over dir refused", noOverwrite: true, invalid: true, isDir: true, Entry: tarEntry{name: "home", typ: tar.TypeReg}},
		{name: "dir over file", isDir: true, Entry: tarEntry{name: "etc/passwd", typ: tar.TypeDir, mode: 0o755}},
		{name: "dir over file refused", noOverwrite: true, invalid: true, Entry: tarEntry{name: "etc/passwd", typ: tar.TypeDir}},
		{name: "dir over dir merges", noOverwrite: true, isDir: true, Entry: tarEntry{name: "home", typ: tar.TypeDir, mode: 0o700}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, outside := sandbox(t)
			r := openRoot(t, root)
			err := r.Extract("/", bytes.NewReader(buildTar(t, tc.Entry)), ExtractOptions{NoOverwriteDirNonDir: tc.noOverwrite})
			if tc.invalid != errdefs.IsInvalidArgument(err) || (!tc.invalid && err != nil) {
				t.Fatalf("err = %v", err)
			}
			fi, err := os.Lstat(filepath.Join(root, tc.Entry.name))
			must(t, err)
			if fi.IsDir() != tc.isDir {
				t.Errorf("%s is a directory: %v", tc.Entry.name, fi.IsDir())
			}
			if tc.name == "dir over dir merges" {
				exists(t, root, "home/user")
				if fi.Mode().Perm() != 0o700 {
					t.Errorf("mode %v", fi.Mode())
				}
			}
			untouched(t, root, outside)
		})
	}
}

// TestRoundTrip archives a tree and extracts it elsewhere: modes (set-id
// bits too), links, hard links, FIFOs, mtimes and content survive.
func TestRoundTrip(t *testing.T) {
	src, _ := sandbox(t)
	tree := filepath.Join(src, "home/user/tree")
	must(t, os.MkdirAll(filepath.Join(tree, "sub/deeper"), 0o750))
	must(t, os.WriteFile(filepath.Join(tree, "sub/run"), []byte("#!/bin/sh\n"), 0o644))
	must(t, unix.Chmod(filepath.Join(tree, "sub/run"), 0o4755))
	must(t, os.WriteFile(filepath.Join(tree, "big"), bytes.Repeat([]byte("0123456789"), 100000), 0o600))
	must(t, os.Link(filepath.Join(tree, "big"), filepath.Join(tree, "sub/hard")))
	must(t, os.Symlink("../big", filepath.Join(tree, "sub/rel")))
	must(t, unix.Mkfifo(filepath.Join(tree, "fifo"), 0o640))
	must(t, os.Chmod(filepath.Join(tree, "fifo"), 0o640))
	mtime := time.Unix(1600000000, 0)
	must(t, os.Chtimes(filepath.Join(tree, "sub/deeper"), mtime, mtime))

	var buf bytes.Buffer
	r := openRoot(t, src)
	ent, st, err := r.Stat("/home/user/tree")
	must(t, err)
	must(t, r.WriteTar(&buf, ent, st.Name))
	ent.Close()

	dst, outside := sandbox(t)
	d := openRoot(t, dst)
	must(t, d.Extract("/tmp", &buf, ExtractOptions{}))
	untouched(t, dst, outside)
	got := filepath.Join(dst, "tmp/tree")
	for name, want := range map[string]fs.FileMode{
		".": fs.ModeDir | 0o750, "sub/run": fs.ModeSetuid | 0o755, "big": 0o600,
		"sub/rel": fs.ModeSymlink | 0o777, "fifo": fs.ModeNamedPipe | 0o640, "sub/deeper": fs.ModeDir | 0o750,
	} {
		fi, err := os.Lstat(filepath.Join(got, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	a, _ := os.Stat(filepath.Join(got, "big"))
	b, _ := os.Stat(filepath.Join(got, "sub/hard"))
	if !os.SameFile(a, b) || a.Size() != 1000000 {
		t.Errorf("hard link lost: %v %v", a, b)
	}
	if target, _ := os.Readlink(filepath.Join(got, "sub/rel")); target != "../big" {
		t.Errorf("symlink target %q", target)
	}
	if fi, _ := os.Stat(filepath.Join(got, "sub/deeper")); !fi.ModTime().Equal(mtime) {
		t.Errorf("directory mtime %v, want %v", fi.ModTime(), mtime)
	}
}

func TestOwner(t *testing.T) {
	root, _ := sandbox(t)
	r := openRoot(t, root)
	uid, gid := os.Getuid(), os.Getgid()
	tr := buildTar(t, tarEntry{name: "f", typ: tar.TypeReg, data: "x"}, tarEntry{name: "l", link: "f", typ: tar.TypeSymlink})
	must(t, r.Extract("/tmp", bytes.NewReader(tr), ExtractOptions{Owner: &[2]int{uid, gid}}))
	for _, n := range []string{"tmp/f", "tmp/l"} {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(root, n), &st))
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s owned by %d:%d", n, st.Uid, st.Gid)
		}
	}
}

func TestDirectory(t *testing.T) {
	root, _ := sandbox(t)
	r := openRoot(t, root)
	tests := []struct {
		path, want string
		invalid    bool
		notFound   bool
	}{
		{path: "/tmp", want: "/tmp"},
		{path: "/escape", want: "/etc"},
		{path: "/escape/", want: "/etc"},
		{path: "/etc/passwd", invalid: true},
		{path: "/up", notFound: true},
		{path: "/nope", notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := r.Directory(ContainerPath(tc.path))
			err = FileError(err, tc.path, "c")
			switch {
			case tc.invalid:
				if !errdefs.IsInvalidArgument(err) {
					t.Errorf("err = %v", err)
				}
			case tc.notFound:
				if !errdefs.IsNotFound(err) {
					t.Errorf("err = %v", err)
				}
			case err != nil || got != tc.want:
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
