package buildctx

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tarContext is the context most Tar tests copy from.
func tarContext(t *testing.T) *Context {
	inner := mkTar(t,
		ent{name: "./", typ: tar.TypeDir},
		ent{name: "x/", typ: tar.TypeDir, mode: 0o750},
		ent{name: "x/y", body: "y", mode: 0o640},
		ent{name: "x/h", typ: tar.TypeLink, link: "x/y"},
		ent{name: "../../evil", body: "e"},
		ent{name: "/abs", body: "a"},
		ent{name: "dev", typ: tar.TypeChar},
		ent{name: "lnk", typ: tar.TypeSymlink, link: "x"},
		ent{name: "lnk/z", body: "z"},
	)
	return extractTest(t, mkTar(t,
		ent{name: "a.txt", body: "A"},
		ent{name: "b.txt", body: "B", mode: 0o600},
		ent{name: "dir/sub/c.txt", body: "C", mode: 0o4755},
		ent{name: "dir/link", typ: tar.TypeSymlink, link: "sub/c.txt"},
		ent{name: "dir/hard", typ: tar.TypeLink, link: "dir/sub/c.txt"},
		ent{name: "ro/", typ: tar.TypeDir, mode: 0o555},
		ent{name: "ro/secret", body: "S", mode: 0o200},
		ent{name: "out", typ: tar.TypeSymlink, link: "../../../../etc"},
		ent{name: "abs", typ: tar.TypeSymlink, link: "/etc/passwd"},
		ent{name: "alink", typ: tar.TypeSymlink, link: "dir/../a.txt"},
		ent{name: "arch.tar.gz", body: string(gzipped(t, inner))},
		ent{name: "plain.gz", body: string(gzipped(t, []byte("not a tar")))},
	))
}

func runTar(t *testing.T, c *Context, spec CopySpec, stat Stat) (map[string]got, []string, string) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := c.Tar(t.Context(), spec, stat, &buf)
	if err != nil {
		t.Fatalf("Tar: %v", err)
	}
	if !strings.HasPrefix(sum, "sha256:") || len(sum) != 71 {
		t.Errorf("checksum %q", sum)
	}
	m, names := readTar(t, buf.Bytes())
	return m, names, sum
}

func TestTar(t *testing.T) {
	c := tarContext(t)
	root := []string{"/", "/opt", "/usr", "/usr/local"}
	cases := map[string]struct {
		spec  CopySpec
		names []string
		check map[string]got // some entries, compared on type, mode, body, link
	}{
		"file-to-file":      {CopySpec{Sources: []string{"a.txt"}, Dest: "/new/y.txt"}, []string{"new/", "new/y.txt"}, map[string]got{"new/": {typ: tar.TypeDir, mode: 0o755}, "new/y.txt": {typ: tar.TypeReg, mode: 0o644, body: "A"}}},
		"file-to-dir":       {CopySpec{Sources: []string{"/a.txt"}, Dest: "/opt"}, []string{"opt/a.txt"}, nil},
		"trailing-slash":    {CopySpec{Sources: []string{"b.txt"}, Dest: "/new/"}, []string{"new/", "new/b.txt"}, map[string]got{"new/b.txt": {typ: tar.TypeReg, mode: 0o600, body: "B"}}},
		"symlink-source":    {CopySpec{Sources: []string{"alink"}, Dest: "/opt/"}, []string{"opt/alink"}, map[string]got{"opt/alink": {typ: tar.TypeReg, mode: 0o644, body: "A"}}},
		"existing-parents":  {CopySpec{Sources: []string{"a.txt"}, Dest: "/usr/local/new/deeper/f"}, []string{"usr/local/new/", "usr/local/new/deeper/", "usr/local/new/deeper/f"}, nil},
		"dir-contents":      {CopySpec{Sources: []string{"dir"}, Dest: "/app"}, []string{"app/", "app/hard", "app/link", "app/sub/", "app/sub/c.txt"}, map[string]got{"app/link": {typ: tar.TypeSymlink, mode: 0o777, link: "sub/c.txt"}, "app/sub/c.txt": {typ: tar.TypeReg, mode: 0o4755, body: "C"}, "app/hard": {typ: tar.TypeReg, mode: 0o4755, body: "C"}}},
		"dir-into-existing": {CopySpec{Sources: []string{"dir/sub/"}, Dest: "/opt"}, []string{"opt/c.txt"}, nil},
		"unreadable-modes":  {CopySpec{Sources: []string{"ro"}, Dest: "/r/"}, []string{"r/", "r/secret"}, map[string]got{"r/secret": {typ: tar.TypeReg, mode: 0o200, body: "S"}}},
		"readonly-dir-mode": {CopySpec{Sources: []string{"."}, Dest: "/opt/"}, nil, map[string]got{"opt/ro/": {typ: tar.TypeDir, mode: 0o555}}},
		"wildcard":          {CopySpec{Sources: []string{"*.txt"}, Dest: "/w/"}, []string{"w/", "w/a.txt", "w/b.txt"}, nil},
		"wildcard-deep":     {CopySpec{Sources: []string{"d?r/s*/*.txt", "nomatch*"}, Dest: "/w/"}, []string{"w/", "w/c.txt"}, nil},
		"several-into-dir":  {CopySpec{Sources: []string{"a.txt", "b.txt"}, Dest: "/opt"}, []string{"opt/a.txt", "opt/b.txt"}, nil},
		"add-archive":       {CopySpec{Sources: []string{"arch.tar.gz"}, Dest: "/ex", Extract: true, AllowURL: true}, []string{"ex/", "ex/x/", "ex/x/y", "ex/x/h", "ex/evil", "ex/abs", "ex/dev", "ex/lnk", "ex/lnk/z"}, map[string]got{"ex/x/": {typ: tar.TypeDir, mode: 0o750}, "ex/x/h": {typ: tar.TypeLink, mode: 0o644, link: "ex/x/y"}, "ex/evil": {typ: tar.TypeReg, mode: 0o644, body: "e"}}},
		"add-not-archive":   {CopySpec{Sources: []string{"plain.gz"}, Dest: "/opt/", Extract: true}, []string{"opt/plain.gz"}, nil},
		"copy-archive":      {CopySpec{Sources: []string{"arch.tar.gz"}, Dest: "/opt/"}, []string{"opt/arch.tar.gz"}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.spec.UID, tc.spec.GID = 1000, 1001
			m, names, _ := runTar(t, c, tc.spec, fakeStat(nil, root))
			if tc.names != nil && !slices.Equal(names, tc.names) {
				t.Errorf("entries %v, want %v", names, tc.names)
			}
			for n, e := range m {
				if e.uid != 1000 || e.gid != 1001 {
					t.Errorf("%s: owner %d:%d", n, e.uid, e.gid)
				}
				if strings.HasPrefix(n, "/") || strings.Contains(n, ".buildctx-") {
					t.Errorf("bad entry name %s", n)
				}
			}
			for n, want := range tc.check {
				e, ok := m[n]
				if !ok || e.typ != want.typ || e.mode != want.mode || e.body != want.body || e.link != want.link {
					t.Errorf("%s: %+v, want %+v", n, e, want)
				}
			}
		})
	}
}

func TestTarErrors(t *testing.T) {
	c := tarContext(t)
	cases := map[string]struct {
		spec CopySpec
		msg  string
	}{
		"missing":         {CopySpec{Sources: []string{"nope"}, Dest: "/"}, "COPY failed: file not found in build context or excluded by .dockerignore: stat nope: file does not exist"},
		"missing-add":     {CopySpec{Sources: []string{"a.txt", "nope"}, Dest: "/", Extract: true, AllowURL: true}, "ADD failed: file not found in build context or excluded by .dockerignore: stat nope: file does not exist"},
		"no-match":        {CopySpec{Sources: []string{"*.nope"}, Dest: "/"}, "COPY failed: no source files were specified"},
		"several":         {CopySpec{Sources: []string{"a.txt", "b.txt"}, Dest: "/nd"}, "When using COPY with more than one source file, the destination must be a directory and end with a /"},
		"several-wild":    {CopySpec{Sources: []string{"*.txt"}, Dest: "/nd"}, "When using COPY with more than one source file, the destination must be a directory and end with a /"},
		"dotdot":          {CopySpec{Sources: []string{"../x"}, Dest: "/"}, "COPY failed: forbidden path outside the build context: ../x ()"},
		"link-out":        {CopySpec{Sources: []string{"out/passwd"}, Dest: "/"}, ""},
		"link-abs":        {CopySpec{Sources: []string{"abs"}, Dest: "/"}, ""},
		"wild-link-out":   {CopySpec{Sources: []string{"ou?"}, Dest: "/"}, ""},
		"private":         {CopySpec{Sources: []string{c.priv}, Dest: "/"}, ""},
		"file-as-dir":     {CopySpec{Sources: []string{"a.txt"}, Dest: "/file/x"}, "cannot copy to /file: not a directory"},
		"dir-onto-file":   {CopySpec{Sources: []string{"dir"}, Dest: "/file"}, "cannot copy to /file: not a directory"},
		"wildcard-syntax": {CopySpec{Sources: []string{"[a"}, Dest: "/"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Tar(t.Context(), tc.spec, fakeStat(nil, []string{"/"}, "/file"), &bytes.Buffer{})
			wantUserError(t, err, tc.msg)
		})
	}
}

func TestTarStatCache(t *testing.T) {
	c := tarContext(t)
	calls := map[string]int{}
	spec := CopySpec{Sources: []string{"a.txt", "b.txt", "dir"}, Dest: "/usr/local/new/"}
	m, _, _ := runTar(t, c, spec, fakeStat(calls, []string{"/", "/usr", "/usr/local"}))
	for p, n := range calls {
		if n > 1 {
			t.Errorf("stat %s called %d times", p, n)
		}
	}
	for _, n := range []string{"usr/", "usr/local/"} {
		if _, ok := m[n]; ok {
			t.Errorf("entry for the existing %s", n)
		}
	}
	if _, ok := m["usr/local/new/"]; !ok {
		t.Error("no entry for the new destination")
	}
}

func TestTarChecksum(t *testing.T) {
	c := tarContext(t)
	spec := CopySpec{Sources: []string{"dir", "a.txt"}, Dest: "/app/"}
	stat := fakeStat(nil, []string{"/"})
	_, _, s1 := runTar(t, c, spec, stat)
	_, _, s2 := runTar(t, c, spec, stat)
	if s1 != s2 {
		t.Errorf("checksum changed: %s, %s", s1, s2)
	}
	spec.UID = 1
	if _, _, s := runTar(t, c, spec, stat); s == s1 {
		t.Error("checksum ignores the owner")
	}
	spec.UID = 0
	if err := os.WriteFile(filepath.Join(c.Dir(), "a.txt"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, s := runTar(t, c, spec, stat); s == s1 {
		t.Error("checksum ignores the content")
	}
}
