package build

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"slices"
	"testing"
)

// A directory copied with COPY --from lands at dest with everything it
// holds, each entry at its place below it.
func TestStageCopyRewriteDirectory(t *testing.T) {
	var src bytes.Buffer
	tw := tar.NewWriter(&src)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "hack/", Mode: 0o755},
		{Typeflag: tar.TypeSymlink, Name: "hack/bad", Linkname: "../../../../../"},
		{Typeflag: tar.TypeSymlink, Name: "hack/good", Linkname: "../subdir"},
		{Typeflag: tar.TypeDir, Name: "hack/d/", Mode: 0o755},
		{Typeflag: tar.TypeReg, Name: "hack/d/f", Mode: 0o644},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()

	var out bytes.Buffer
	s := &stageCopy{
		stat: func(p string) (bool, bool, error) { return p == "/", true, nil },
		tw:   tar.NewWriter(&out), sum: sha256.New(), made: map[string]bool{},
	}
	if err := s.rewrite(&src, "hack", "", "/hack", false); err != nil {
		t.Fatal(err)
	}
	s.tw.Close()
	var got []string
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name+" "+h.Linkname)
	}
	want := []string{"hack/ ", "hack/bad ../../../../../", "hack/good ../subdir", "hack/d/ ", "hack/d/f "}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}
