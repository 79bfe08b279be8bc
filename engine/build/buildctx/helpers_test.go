package buildctx

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ent is an archive entry for tests; typ defaults to a regular file.
type ent struct {
	name, body, link string
	typ              byte
	mode             int64
}

var testTime = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

func mkTar(t testing.TB, ents ...ent) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: testTime, Uid: 1234, Gid: 5678}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipped(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// extractTest extracts data into a fresh directory; the context is
// closed at the end of the test.
func extractTest(t *testing.T, data []byte) *Context {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ctx")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := Extract(bytes.NewReader(data), dir)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func wantUserError(t *testing.T, err error, msg string) {
	t.Helper()
	var ue *Error
	if !errors.As(err, &ue) {
		t.Fatalf("got %v (%T), want an *Error", err, err)
	}
	if msg != "" && ue.Msg != msg {
		t.Fatalf("got %q, want %q", ue.Msg, msg)
	}
}

// got is a Tar entry as read back.
type got struct {
	typ      byte
	mode     int64
	uid, gid int
	body     string
	link     string
	mtime    time.Time
}

// readTar reads a Tar stream: its entries by name, and the names in order.
func readTar(t *testing.T, b []byte) (map[string]got, []string) {
	t.Helper()
	m := map[string]got{}
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return m, names
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if _, dup := m[h.Name]; dup {
			t.Errorf("duplicate entry %s", h.Name)
		}
		m[h.Name] = got{h.Typeflag, h.Mode, h.Uid, h.Gid, string(body), h.Linkname, h.ModTime}
		names = append(names, h.Name)
	}
}

// fakeStat is a container with the given directories and files; it
// counts the calls per path.
func fakeStat(calls map[string]int, dirs []string, files ...string) Stat {
	return func(p string) (bool, bool, error) {
		if calls != nil {
			calls[p]++
		}
		for _, d := range dirs {
			if d == p {
				return true, true, nil
			}
		}
		for _, f := range files {
			if f == p {
				return true, false, nil
			}
		}
		return false, false, nil
	}
}
