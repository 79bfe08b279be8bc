package buildctx

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestExtract(t *testing.T) {
	data := mkTar(t,
		ent{name: "d/", typ: tar.TypeDir, mode: 0o750},
		ent{name: "d/f", body: "hello", mode: 0o640},
		ent{name: "x.sh", body: "#!/bin/sh", mode: 0o755},
		ent{name: "suid", body: "s", mode: 0o4755},
		ent{name: "l", typ: tar.TypeSymlink, link: "d/f"},
		ent{name: "h", typ: tar.TypeLink, link: "d/f"},
		ent{name: "/abs/g", body: "g"},
		ent{name: "p", typ: tar.TypeFifo},
		ent{name: "m/n/o", body: "o"},
		ent{name: "ro/", typ: tar.TypeDir, mode: 0o555},
		ent{name: "ro/f", body: "in a read-only directory"},
	)
	for name, b := range map[string][]byte{"plain": data, "gzip": gzipped(t, data)} {
		t.Run(name, func(t *testing.T) {
			c := extractTest(t, b)
			dir := c.Dir()
			for p, body := range map[string]string{"d/f": "hello", "x.sh": "#!/bin/sh", "h": "hello", "abs/g": "g", "m/n/o": "o", "ro/f": "in a read-only directory"} {
				if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != body {
					t.Errorf("%s: %q, %v; want %q", p, b, err, body)
				}
			}
			for p, mode := range map[string]os.FileMode{"d/f": 0o640, "x.sh": 0o755, "d": os.ModeDir | 0o750, "suid": os.ModeSetuid | 0o755} {
				fi, err := os.Lstat(filepath.Join(dir, p))
				if err != nil || fi.Mode() != mode {
					t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode(), err, mode)
				} else if !fi.ModTime().Equal(testTime) {
					t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), testTime)
				}
			}
			if l, err := os.Readlink(filepath.Join(dir, "l")); err != nil || l != "d/f" {
				t.Errorf("symlink l: %q, %v", l, err)
			}
			var a, h syscall.Stat_t
			syscall.Stat(filepath.Join(dir, "d/f"), &a)
			syscall.Stat(filepath.Join(dir, "h"), &h)
			if a.Ino != h.Ino {
				t.Error("h is not a hard link of d/f")
			}
			if _, err := os.Lstat(filepath.Join(dir, "p")); !os.IsNotExist(err) {
				t.Errorf("fifo extracted: %v", err)
			}
			if fi, err := os.Stat(filepath.Join(dir, "m/n")); err != nil || !fi.IsDir() {
				t.Errorf("missing parent not made: %v", err)
			}
		})
	}
}

// TestExtractEscapes extracts hostile archives next to a sentinel
// directory that must stay empty.
func TestExtractEscapes(t *testing.T) {
	hostName := "buildctx-escape-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	cases := map[string]struct {
		ents    []ent
		wantErr bool
		inside  string // a file that must be in the context
	}{
		"dotdot":            {ents: []ent{{name: "../sentinel/x", body: "x"}}, wantErr: true},
		"dotdot-deep":       {ents: []ent{{name: "a/../../sentinel/x", body: "x"}}, wantErr: true},
		"absolute":          {ents: []ent{{name: "/sentinel/x", body: "x"}}, inside: "sentinel/x"},
		"hardlink-out":      {ents: []ent{{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}}, wantErr: true},
		"hardlink-abs":      {ents: []ent{{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}}, wantErr: true},
		"hardlink-via-link": {ents: []ent{{name: "evil", typ: tar.TypeSymlink, link: "/"}, {name: "h", typ: tar.TypeLink, link: "evil/etc/passwd"}}, wantErr: true},
		"symlink-root":      {ents: []ent{{name: "evil", typ: tar.TypeSymlink, link: "/"}, {name: "evil/" + hostName, body: "x"}}, inside: hostName},
		"symlink-up":        {ents: []ent{{name: "up", typ: tar.TypeSymlink, link: "../sentinel"}, {name: "up/x", body: "x"}}, wantErr: true},
		"symlink-replaced":  {ents: []ent{{name: "s", typ: tar.TypeSymlink, link: "../sentinel/x"}, {name: "s", body: "x"}}, inside: "s"},
		"symlink-dir-chain": {ents: []ent{{name: "a", typ: tar.TypeSymlink, link: "../../.."}, {name: "a/b/c", body: "x"}}, inside: "b/c"},
	}
	var passwd syscall.Stat_t
	syscall.Stat("/etc/passwd", &passwd)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir, sentinel := filepath.Join(parent, "ctx"), filepath.Join(parent, "sentinel")
			os.Mkdir(dir, 0o700)
			os.Mkdir(sentinel, 0o700)
			c, err := Extract(bytes.NewReader(mkTar(t, tc.ents...)), dir)
			if tc.wantErr {
				wantUserError(t, err, "")
			} else if err != nil {
				t.Fatal(err)
			} else {
				defer c.Close()
			}
			if ents, _ := os.ReadDir(sentinel); len(ents) > 0 {
				t.Errorf("sentinel holds %v", ents)
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 2 {
				t.Errorf("parent holds %v", ents)
			}
			if _, err := os.Lstat("/" + hostName); err == nil {
				os.Remove("/" + hostName)
				t.Error("wrote at the host's /")
			}
			if tc.inside != "" {
				if _, err := os.Lstat(filepath.Join(dir, tc.inside)); err != nil {
					t.Errorf("%s not in the context: %v", tc.inside, err)
				}
			}
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if st, ok := fi.Sys().(*syscall.Stat_t); err == nil && ok && st.Ino == passwd.Ino && st.Dev == passwd.Dev {
					t.Errorf("%s is /etc/passwd", p)
				}
				return nil
			})
		})
	}
}

func TestExtractMalformed(t *testing.T) {
	valid := mkTar(t, ent{name: "f", body: strings.Repeat("x", 2000)})
	for name, b := range map[string][]byte{
		"garbage":   bytes.Repeat([]byte("not a tar "), 200),
		"truncated": valid[:1024],
		"gzip-cut":  gzipped(t, valid)[:30],
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Extract(bytes.NewReader(b), dir)
			wantUserError(t, err, "")
		})
	}
	if _, err := Extract(bytes.NewReader(valid), filepath.Dir(t.TempDir())); err == nil {
		t.Error("Extract into a non-empty directory succeeded")
	}
}

func TestDockerignore(t *testing.T) {
	c := extractTest(t, mkTar(t,
		ent{name: ".dockerignore", body: "# comment\n**/*.log\nbuild\n!build/keep\nsecret/\nDockerfile\n.dockerignore\nsub/Dockerfile.prod\n"},
		ent{name: "Dockerfile", body: "FROM scratch\n"},
		ent{name: "a.log", body: "log"},
		ent{name: "deep/b.log", body: "log"},
		ent{name: "b.txt", body: "b"},
		ent{name: "build/x", body: "x"},
		ent{name: "build/keep", body: "keep"},
		ent{name: "secret/s", body: "s"},
		ent{name: "sub/Dockerfile.prod", body: "FROM prod\n"},
		ent{name: "sub/other", body: "o"},
	))
	for p, want := range map[string]bool{
		".dockerignore": true, "Dockerfile": true, "a.log": false, "deep/b.log": false, "deep": true, "b.txt": true,
		"build/x": false, "build/keep": true, "secret": false, "sub/Dockerfile.prod": false, "sub/other": true,
	} {
		if _, err := os.Lstat(filepath.Join(c.Dir(), p)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
	if b, err := c.Dockerfile("sub/Dockerfile.prod"); err != nil || string(b) != "FROM prod\n" {
		t.Errorf("excluded Dockerfile: %q, %v", b, err)
	}
	var buf bytes.Buffer
	if _, err := c.Tar(t.Context(), CopySpec{Sources: []string{"."}, Dest: "/"}, fakeStat(nil, []string{"/"}), &buf); err != nil {
		t.Fatal(err)
	}
	_, names := readTar(t, buf.Bytes())
	want := []string{".dockerignore", "Dockerfile", "b.txt", "build/", "build/keep", "deep/", "sub/", "sub/other"}
	if !slices.Equal(names, want) {
		t.Errorf("COPY . copied %v, want %v", names, want)
	}
}

func TestDockerfile(t *testing.T) {
	cases := map[string]struct {
		ents       []ent
		name, want string
		err        string // "" for a user error of any message
	}{
		"default":        {ents: []ent{{name: "Dockerfile", body: "A"}, {name: "dockerfile", body: "a"}}, want: "A"},
		"lowercase":      {ents: []ent{{name: "dockerfile", body: "a"}}, want: "a"},
		"custom":         {ents: []ent{{name: "sub/My.df", body: "m"}}, name: "sub/My.df", want: "m"},
		"link-inside":    {ents: []ent{{name: "sub/real", body: "r"}, {name: "Dockerfile", typ: tar.TypeSymlink, link: "sub/../sub/real"}}, want: "r"},
		"missing":        {ents: []ent{{name: "x", body: "x"}}, err: "Cannot locate specified Dockerfile: Dockerfile"},
		"missing-custom": {ents: []ent{{name: "x", body: "x"}}, name: "sub/df", err: "Cannot locate specified Dockerfile: sub/df"},
		"directory":      {ents: []ent{{name: "Dockerfile/", typ: tar.TypeDir}}, err: "Cannot locate specified Dockerfile: Dockerfile"},
		"empty":          {ents: []ent{{name: "Dockerfile", body: ""}}, err: "the Dockerfile (Dockerfile) cannot be empty"},
		"link-abs":       {ents: []ent{{name: "Dockerfile", typ: tar.TypeSymlink, link: "/etc/passwd"}}},
		"link-up":        {ents: []ent{{name: "Dockerfile", typ: tar.TypeSymlink, link: "../../../../../../etc/passwd"}}},
		"name-up":        {ents: []ent{{name: "x", body: "x"}}, name: "../etc/passwd"},
		"private-dir":    {ents: []ent{{name: "x", body: "x"}}, name: ".buildctx-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := extractTest(t, mkTar(t, tc.ents...))
			if name == "private-dir" {
				os.WriteFile(filepath.Join(c.Dir(), c.priv, "df"), []byte("private"), 0o600)
				tc.name = c.priv + "/df"
				tc.err = "Cannot locate specified Dockerfile: " + tc.name
			}
			b, err := c.Dockerfile(tc.name)
			if tc.want != "" {
				if err != nil || string(b) != tc.want {
					t.Fatalf("got %q, %v; want %q", b, err, tc.want)
				}
				return
			}
			wantUserError(t, err, tc.err)
		})
	}
}
