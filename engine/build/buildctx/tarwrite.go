package buildctx

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"
	"time"
)

// kind is what a path of the container is, as far as a tarWriter knows.
type kind int

const (
	kindMissing kind = iota + 1
	kindFile
	kindDir
	kindLink // a symlink this stream makes: extraction resolves it
)

// tarWriter writes the entries of one Tar call and sums them.
type tarWriter struct {
	tw       *tar.Writer
	sum      hash.Hash
	stat     Stat
	known    map[string]kind // stat results and entries written
	uid, gid int
	dest     string // clean and absolute
}

func newTarWriter(w io.Writer, stat Stat, uid, gid int, dest string) *tarWriter {
	return &tarWriter{
		tw: tar.NewWriter(w), sum: sha256.New(), stat: stat,
		known: map[string]kind{"/": kindDir}, uid: uid, gid: gid, dest: dest,
	}
}

// lookup tells what p, clean and absolute, is: what this stream made it,
// else what stat says.
func (t *tarWriter) lookup(p string) (kind, error) {
	if k, ok := t.known[p]; ok {
		return k, nil
	}
	exists, isDir, err := t.stat(p)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", p, err)
	}
	k := kindMissing
	switch {
	case isDir:
		k = kindDir
	case exists:
		k = kindFile
	}
	t.known[p] = k
	return k, nil
}

// ensureDir writes entries for the directories of p, p included, that
// the container lacks.
func (t *tarWriter) ensureDir(p string) error {
	k, err := t.lookup(p)
	switch {
	case err != nil:
		return err
	case k == kindDir || k == kindLink:
		return nil
	case k == kindFile:
		return userErrorf("cannot copy to %s: not a directory", p)
	}
	if err := t.ensureDir(path.Dir(p)); err != nil {
		return err
	}
	return t.write(&tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: 0o755, ModTime: time.Now()}, nil)
}

// write writes h, named by its clean absolute path, with content r for a
// regular file, owned by UID:GID; entries at or under the destination are
// summed.
func (t *tarWriter) write(h *tar.Header, r io.Reader) error {
	abs := h.Name
	h.Name = strings.TrimPrefix(abs, "/")
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	h.Uid, h.Gid, h.Uname, h.Gname = t.uid, t.gid, "", ""
	h.Format = tar.FormatPAX
	if h.Typeflag != tar.TypeReg {
		h.Size = 0
	}
	var out io.Writer = t.tw
	if rel, ok := t.relative(abs); ok {
		fmt.Fprintf(t.sum, "%q %c %o %d:%d %q %d:%d %d\n", rel, h.Typeflag, h.Mode, t.uid, t.gid, h.Linkname, h.Devmajor, h.Devminor, h.Size)
		out = io.MultiWriter(t.tw, t.sum)
	}
	if err := t.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("writing %s: %w", abs, err)
	}
	if h.Size > 0 {
		if _, err := io.CopyN(out, r, h.Size); err != nil {
			return fmt.Errorf("writing %s: %w", abs, err)
		}
	}
	k := kindFile
	switch h.Typeflag {
	case tar.TypeDir:
		k = kindDir
	case tar.TypeSymlink:
		k = kindLink
	}
	t.known[abs] = k
	return nil
}

// relative names p relative to the destination, if it is there or under
// it.
func (t *tarWriter) relative(p string) (string, bool) {
	switch {
	case p == t.dest:
		return ".", true
	case t.dest == "/":
		return p[1:], true
	case strings.HasPrefix(p, t.dest+"/"):
		return p[len(t.dest)+1:], true
	}
	return "", false
}

// close ends the stream and returns the checksum.
func (t *tarWriter) close() (string, error) {
	if err := t.tw.Close(); err != nil {
		return "", fmt.Errorf("writing the archive: %w", err)
	}
	return "sha256:" + hex.EncodeToString(t.sum.Sum(nil)), nil
}
