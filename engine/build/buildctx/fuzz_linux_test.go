package buildctx

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzContextExtract feeds Extract, the decoder of the untrusted build context,
// arbitrary bytes next to a sentinel directory: nothing may appear
// outside the context directory, and nothing may panic.
func FuzzContextExtract(f *testing.F) {
	seeds := [][]ent{
		{{name: "a/", typ: tar.TypeDir}, {name: "a/b", body: "b"}, {name: ".dockerignore", body: "a\n!a/b\n"}},
		{{name: "../sentinel/x", body: "x"}},
		{{name: "/sentinel/x", body: "x"}},
		{{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}},
		{{name: "evil", typ: tar.TypeSymlink, link: "/"}, {name: "evil/x", body: "x"}},
		{{name: "up", typ: tar.TypeSymlink, link: "../sentinel"}, {name: "up/x", body: "x"}},
		{{name: "l", typ: tar.TypeSymlink, link: "../sentinel/f"}, {name: "h", typ: tar.TypeLink, link: "l"}},
		{{name: "d/", typ: tar.TypeDir, mode: 0o500}, {name: "d/f", body: "f", mode: 0o4000}},
		{{name: ".dockerignore", typ: tar.TypeSymlink, link: "../sentinel"}, {name: "p", typ: tar.TypeFifo}},
	}
	for _, s := range seeds {
		b := mkTar(f, s...)
		f.Add(b)
		f.Add(gzipped(f, b))
	}
	f.Add([]byte("not a tar"))
	f.Fuzz(fuzzOne)
}

// FuzzExtractEntries builds archives of fuzzed names, link targets and
// types, which reach the escape checks far more often than raw bytes.
func FuzzExtractEntries(f *testing.F) {
	f.Add("a\na/b", "", []byte{1, 0})
	f.Add("../x", "", []byte{0})
	f.Add("l\nl/x", "/", []byte{2, 0})
	f.Add("l\nl/x", "../sentinel", []byte{2, 0})
	f.Add("h", "../../etc/passwd", []byte{3})
	f.Add("l\nh", "../sentinel/f\nl", []byte{2, 3})
	f.Add("d/\nd/../../e", "", []byte{1, 0})
	f.Add(".dockerignore\nx\ny", "x", []byte{0, 0, 2})
	kinds := []byte{tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeFifo}
	f.Fuzz(func(t *testing.T, names, links string, types []byte) {
		ns, ls := strings.Split(names, "\n"), strings.Split(links, "\n")
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i, n := range ns[:min(len(ns), 8)] {
			h := &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o755}
			if i < len(types) {
				h.Typeflag = kinds[int(types[i])%len(kinds)]
				h.Mode = int64(types[i]) << 4
			}
			if i < len(ls) {
				h.Linkname = ls[i]
			}
			if h.Typeflag == tar.TypeReg {
				h.Size = int64(len(n))
			}
			if tw.WriteHeader(h) != nil {
				return // not an archive a client could send
			}
			if h.Size > 0 {
				tw.Write([]byte(n))
			}
		}
		tw.Close()
		fuzzOne(t, buf.Bytes())
	})
}

// fuzzOne extracts data next to a sentinel directory, uses the context
// and closes it, and checks that nothing was written outside of it.
func fuzzOne(t *testing.T, data []byte) {
	parent := t.TempDir()
	dir, sentinel := filepath.Join(parent, "ctx"), filepath.Join(parent, "sentinel")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sentinel, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := Extract(bytes.NewReader(data), dir)
	if err == nil {
		c.Dockerfile("")
		c.Tar(t.Context(), CopySpec{Sources: []string{"."}, Dest: "/"}, fakeStat(nil, []string{"/"}), &bytes.Buffer{})
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	} else {
		(&Context{dir: dir}).Close()
	}
	if ents, _ := os.ReadDir(sentinel); len(ents) > 0 {
		t.Fatalf("sentinel holds %v", ents)
	}
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if e.Name() != "sentinel" {
			t.Fatalf("parent holds %s", e.Name())
		}
	}
}
