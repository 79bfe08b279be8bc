package archive

import (
	"archive/tar"
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzExtract extracts archives of fuzzed names, link targets and types
// (the untrusted input of docker cp) into a rootfs full of links that
// point out of it, and checks that nothing outside the rootfs changed.
func FuzzExtract(f *testing.F) {
	seeds := []struct {
		names, links string
		types        []byte
	}{
		{"a\na/b", "", []byte{tar.TypeDir, tar.TypeReg}},
		{"../x", "", []byte{tar.TypeReg}},
		{"l\nl/x", "/", []byte{tar.TypeSymlink, tar.TypeReg}},
		{"l\nl/x", "../../outside", []byte{tar.TypeSymlink, tar.TypeReg}},
		{"l\nl/secret", "/../../outside\n", []byte{tar.TypeSymlink, tar.TypeReg}},
		{"up/x\nabs/x\noutfile", "", []byte{tar.TypeReg, tar.TypeReg, tar.TypeReg}},
		{"h", "../outside/secret", []byte{tar.TypeLink}},
		{"h\nh", "outfile\n", []byte{tar.TypeLink, tar.TypeReg}},
		{"d/\nd/../../e", "", []byte{tar.TypeDir, tar.TypeReg}},
		{"escape/x\nf", "\n/proc/self/root/", []byte{tar.TypeReg, tar.TypeSymlink}},
		{"p\np/q", "", []byte{tar.TypeFifo, tar.TypeReg}},
	}
	for _, s := range seeds {
		f.Add(s.names, s.links, s.types, true)
	}
	kinds := []byte{tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeFifo}
	f.Fuzz(func(t *testing.T, names, links string, types []byte, noOverwrite bool) {
		ns, ls := strings.Split(names, "\n"), strings.Split(links, "\n")
		if len(ns) > 8 {
			ns = ns[:8]
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i, n := range ns {
			h := &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o755, ModTime: time.Unix(0, 0)}
			if i < len(types) {
				h.Typeflag = kinds[int(types[i])%len(kinds)]
			}
			if i < len(ls) {
				h.Linkname = ls[i]
			}
			if h.Typeflag == tar.TypeReg {
				h.Size = 4
			}
			if tw.WriteHeader(h) != nil {
				return // not an archive a client could send
			}
			if h.Size > 0 {
				tw.Write([]byte("data"))
			}
		}
		if tw.Close() != nil {
			return
		}
		root, outside := sandbox(t)
		r := openRoot(t, root)
		for _, dest := range []string{"/tmp", "/"} {
			d, err := r.Directory(dest)
			if err != nil {
				t.Fatal(err)
			}
			// Refusals are fine; any change outside the rootfs is not.
			r.Extract(d, bytes.NewReader(buf.Bytes()), ExtractOptions{NoOverwriteDirNonDir: noOverwrite})
			untouched(t, root, outside)
		}
		// Nothing in the rootfs became a hard link to the host's secret.
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(outside, "secret"), &st); err != nil || st.Nlink != 1 {
			t.Errorf("the host's secret has %d links (%v)", st.Nlink, err)
		}
	})
}
