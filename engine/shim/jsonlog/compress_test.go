package jsonlog

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipFile is a compressor as the shim's, in Go.
func gzipFile(p string) {
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	f, err := os.Create(p + ".gz.tmp")
	if err != nil {
		return
	}
	zw := gzip.NewWriter(f)
	zw.Write(b)
	zw.Close()
	f.Close()
	if os.Rename(p+".gz.tmp", Gunzipped(p)) == nil {
		os.Remove(p)
	}
}

// writeLines writes "line 00" … to a log rotated as rot, compressed by
// gzipFile.
func writeLines(t *testing.T, path string, rot Rotation, n int) {
	t.Helper()
	w, err := OpenWriter(path, rot)
	if err != nil {
		t.Fatal(err)
	}
	w.CompressWith(gzipFile)
	out := w.Stream("stdout")
	for i := range n {
		fmt.Fprintf(out, "line %02d\n", i)
	}
	out.Close()
	w.Close()
}

func gunzip(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }

func readLines(t *testing.T, path string, opts ReadOptions) []string {
	t.Helper()
	opts.Gunzip = gunzip
	var got []string
	if err := Read(context.Background(), path, opts, func(e Entry) error {
		got = append(got, strings.TrimSpace(string(e.Line)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestLogRotationCompressed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c-json.log")
	writeLines(t, path, Rotation{MaxSize: 300, MaxFiles: 4, Compress: true}, 40)
	for _, p := range []string{path + ".1", path + ".2", path + ".3"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left uncompressed: %v", p, err)
		}
		f, err := os.Open(p + gzExt)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s.gz: %v", p, err)
		}
		b, err := io.ReadAll(zr)
		f.Close()
		if err != nil || len(b) == 0 || len(b) > 300 || !strings.Contains(string(b), `"stream":"stdout"`) {
			t.Errorf("%s.gz holds %q, %v", p, b, err)
		}
	}
	if _, err := os.Stat(path + ".4.gz"); !os.IsNotExist(err) {
		t.Errorf("max-file 4 kept a fifth file: %v", err)
	}
	got := readLines(t, path, ReadOptions{Tail: -1})
	if len(got) < 4 || got[len(got)-1] != "line 39" {
		t.Fatalf("read across compressed files: %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order: %v", got)
		}
	}
	// A tail longer than the live file and the first rotated one reaches
	// into the compressed files, and starts at the right line.
	n := len(got) - 2
	tail := readLines(t, path, ReadOptions{Tail: n})
	if len(tail) != n || tail[0] != got[2] || tail[n-1] != "line 39" {
		t.Errorf("tail %d = %v, want from %s", n, tail, got[2])
	}
	if all := readLines(t, path, ReadOptions{Tail: 1000}); len(all) != len(got) {
		t.Errorf("tail 1000 = %d lines, want %d", len(all), len(got))
	}
	// Without a way to read them, compressed files are an error, not a
	// silently shorter log.
	err := Read(context.Background(), path, ReadOptions{Tail: -1}, func(Entry) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "no way to read it") {
		t.Errorf("read without Gunzip: %v", err)
	}
}

// A reader meets path.1 still uncompressed, or already replaced by
// path.1.gz between its listing and its open: the same lines either way.
func TestReadRotatedWhileCompressing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c-json.log")
	writeLines(t, path, Rotation{MaxSize: 300, MaxFiles: 2}, 8)
	want := readLines(t, path, ReadOptions{Tail: -1})
	off, found, err := fileTailOffset(path+".1", 2, gunzip)
	if err != nil || found != 2 {
		t.Fatalf("tail offset of path.1: %d %d %v", off, found, err)
	}
	gzipFile(path + ".1")
	if _, err := os.Stat(path + ".1"); !os.IsNotExist(err) {
		t.Fatalf("path.1 not replaced: %v", err)
	}
	if got := readLines(t, path, ReadOptions{Tail: -1}); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("after compression read %v, want %v", got, want)
	}
	// The offset found in path.1 holds in path.1.gz (listed as path.1).
	var got []string
	if err := readRotated(path+".1", off, ReadOptions{Gunzip: gunzip}, func(e Entry) error {
		got = append(got, strings.TrimSpace(string(e.Line)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gzOff, _, err := gzTailOffset(path+".1"+gzExt, 2, gunzip)
	if len(got) != 2 || err != nil || gzOff != off {
		t.Errorf("from the plain file's offset %d: %v (gz offset %d, %v)", off, got, gzOff, err)
	}
}
