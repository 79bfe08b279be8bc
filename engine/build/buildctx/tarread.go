package buildctx

import (
	"archive/tar"
	"io"
	"path"
	"strings"
)

// archiveReader makes the errors of reading the archive user errors.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = userErrorf("reading the build context: %v", err)
	}
	return n, err
}

// cleanName makes an archive name relative to the root: leading "/"
// dropped, cleaned, "" for the root itself; a name climbing out of the
// root is an error.
func cleanName(name string) (string, error) {
	rel := path.Clean(strings.TrimLeft(name, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", userErrorf("build context: %q is outside of the context", name)
	}
	if rel == "." {
		return "", nil
	}
	return rel, nil
}

// isSparse: a sparse entry may claim any size with little data; no
// client sends one, so they are refused rather than written out.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}
