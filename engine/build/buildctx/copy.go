package buildctx

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"go.podman.io/storage/pkg/archive"
)

// copyTree copies the contents of the context directory full into dest.
func (c *Context) copyTree(ctx context.Context, t *tarWriter, full, dest string) error {
	if err := t.ensureDir(dest); err != nil {
		return err
	}
	priv := filepath.Join(c.dir, c.priv)
	return filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == priv {
			return filepath.SkipDir
		}
		if p == full {
			return nil
		}
		rel, err := filepath.Rel(full, p)
		if err != nil {
			return err
		}
		return c.copyEntry(t, p, path.Join(dest, filepath.ToSlash(rel)))
	})
}

// copyEntry writes the file, directory (not its contents) or symlink at
// full, a path of the context, as target; other files are skipped (the
// context has none). Hard links become regular files.
func (c *Context) copyEntry(t *tarWriter, full, target string) error {
	fi, err := os.Lstat(full)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: target, Mode: int64(c.mode(fi)), ModTime: fi.ModTime()}
	switch {
	case fi.Mode().IsRegular():
		f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		return t.write(h, f)
	case fi.IsDir():
		h.Typeflag = tar.TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		if h.Linkname, err = os.Readlink(full); err != nil {
			return err
		}
		h.Typeflag = tar.TypeSymlink
	default:
		return nil
	}
	return t.write(h, nil)
}

// mode is the permission and set-id bits of fi, as the archive gave them.
func (c *Context) mode(fi fs.FileInfo) uint32 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return uint32(fi.Mode().Perm())
	}
	if m, ok := c.modes[st.Ino]; ok {
		return m
	}
	return st.Mode & 0o7777
}

// isArchive tells whether the file at full is a tar archive, compressed
// or not, as Docker's ADD decides.
func isArchive(full string) bool {
	f, err := os.Open(full)
	if err != nil {
		return false
	}
	defer f.Close()
	r, err := archive.DecompressStream(f)
	if err != nil {
		return false
	}
	defer r.Close()
	_, err = tar.NewReader(r).Next()
	return err == nil
}

// extractArchive writes the entries of the archive at full under dest:
// names cleaned and joined under dest, hard link targets too, owners
// replaced; entries of other types are skipped.
func (c *Context) extractArchive(ctx context.Context, t *tarWriter, cmd, full, dest string) error {
	f, err := os.Open(full)
	if err != nil {
		return err
	}
	defer f.Close()
	dr, err := archive.DecompressStream(f)
	if err != nil {
		return userErrorf("%s failed: %s: %v", cmd, path.Base(full), err)
	}
	defer dr.Close()
	if err := t.ensureDir(dest); err != nil {
		return err
	}
	tr := tar.NewReader(dr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return userErrorf("%s failed: reading %s: %v", cmd, path.Base(full), err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink, tar.TypeFifo, tar.TypeChar, tar.TypeBlock:
		default:
			continue
		}
		if isSparse(hdr) {
			return userErrorf("%s failed: %s: %s: sparse files are not supported", cmd, path.Base(full), hdr.Name)
		}
		target := path.Join(dest, path.Clean("/"+hdr.Name))
		if target == dest {
			continue // the archive's root: dest is made already
		}
		if err := t.ensureDir(path.Dir(target)); err != nil {
			return err
		}
		h := &tar.Header{
			Typeflag: hdr.Typeflag, Name: target, Mode: hdr.Mode & 0o7777, Size: hdr.Size,
			ModTime: hdr.ModTime, Linkname: hdr.Linkname, Devmajor: hdr.Devmajor, Devminor: hdr.Devminor,
		}
		if hdr.Typeflag == tar.TypeLink {
			h.Linkname = path.Join(dest, path.Clean("/"+hdr.Linkname))[1:]
		}
		if err := t.write(h, archiveReader{tr}); err != nil {
			var ue *Error
			if errors.As(err, &ue) {
				return userErrorf("%s failed: %s: %v", cmd, path.Base(full), err)
			}
			return err
		}
	}
}

// addURL downloads url and writes it as dest, or in dest when dirLike.
func (c *Context) addURL(ctx context.Context, t *tarWriter, cmd, url, dest string, dirLike bool) error {
	dl, err := c.download(ctx, cmd, url)
	if err != nil {
		return err
	}
	defer dl.file.Close()
	target := dest
	if dirLike {
		if dl.name == "" {
			return userErrorf("%s failed: cannot determine filename from url: %s", cmd, url)
		}
		target = path.Join(dest, dl.name)
	}
	if err := t.ensureDir(path.Dir(target)); err != nil {
		return err
	}
	fi, err := dl.file.Stat()
	if err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: target, Mode: 0o600, Size: fi.Size(), ModTime: dl.mtime}
	return t.write(h, dl.file)
}
