package storage

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

// FuzzGunzip: whatever Go's gzip reader decompresses without an error,
// the igzip path decompresses to the same bytes, without an error. Where
// Go fails, igzip may fail or be lenient (trailing bytes after a member):
// a layer's DiffID is checked on what comes out either way.
func FuzzGunzip(f *testing.F) {
	needIgzip(f)
	f.Add(gz(f, []byte("hello")))
	f.Add(gz(f, []byte("hello"), []byte("world")))
	f.Add(gz(f, nil))
	f.Add(gz(f, noisy(2<<10, 6))) // small: each input minimized costs one igzip per step
	f.Add(append(gz(f, []byte("x")), 0, 0, 0))
	f.Fuzz(func(t *testing.T, blob []byte) {
		got, gerr := decompressAll(t, blob)
		zr, err := gzip.NewReader(bytes.NewReader(blob))
		if err != nil {
			return
		}
		want, err := io.ReadAll(zr)
		if err != nil {
			return
		}
		if gerr != nil {
			t.Fatalf("Go decompresses %d bytes, the igzip path fails: %v", len(want), gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("igzip path gave %d bytes, Go %d, not the same", len(got), len(want))
		}
	})
}
