package buildctx

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CopySpec is one COPY or ADD instruction after variable expansion.
type CopySpec struct {
	// Sources as written in the Dockerfile, relative to the context root
	// (a leading "/" means the context root too); they may hold
	// wildcards (filepath.Match syntax, matched per path component
	// against the context's files). For ADD, a source may also be an
	// http:// or https:// URL (see AllowURL).
	Sources []string
	// Dest is the absolute destination in the container, already
	// resolved against WORKDIR; a trailing "/" is significant and kept.
	Dest string
	// UID and GID own every entry written (Docker: 0:0 unless --chown).
	UID, GID int
	// Extract (ADD): a local source that is a tar archive (plain, gzip,
	// bzip2, xz) is unpacked into the destination directory instead of
	// copied.
	Extract bool
	// AllowURL (ADD): sources that are URLs are downloaded (net/http,
	// ctx-aware); the file is named after the last path element of the
	// URL (or Dest when Dest is not a directory), mode 0600, mtime from
	// the Last-Modified header when present.
	AllowURL bool
}

// Stat tells what is at an absolute path in the container's root
// filesystem, following symlinks (the executor implements it against the
// real container): exists, and whether it is a directory.
type Stat func(path string) (exists, isDir bool, err error)

// source is one source after wildcard expansion.
type source struct {
	rel   string // the resolved path in the context ("" is its root)
	name  string // its base name as written or matched
	isDir bool
	url   string // or a URL to download
}

// Tar writes to w the tar stream that, extracted at "/" of the
// container's root filesystem, performs the copy with Docker's COPY/ADD
// semantics, and returns a checksum ("sha256:<hex>") of exactly what is
// copied (names relative to the destination, types, modes, owners,
// contents, link targets; not times) that the executor uses as the
// build cache key. Entry names are relative paths (no leading "/").
// Parent directories missing in the container (per stat, cached within
// the call) get entries with mode 0755 owned by UID:GID; existing ones
// get none. Errors the user can fix are *Error with Docker's messages;
// after an error, what was written to w is not a complete archive.
func (c *Context) Tar(ctx context.Context, spec CopySpec, stat Stat, w io.Writer) (string, error) {
	cmd := "COPY"
	if spec.Extract || spec.AllowURL {
		cmd = "ADD"
	}
	dest := spec.Dest
	if !strings.HasPrefix(dest, "/") {
		dest = "/" + dest
	}
	dirLike := strings.HasSuffix(dest, "/")
	dest = path.Clean(dest)
	srcs, err := c.sources(cmd, spec)
	if err != nil {
		return "", err
	}
	t := newTarWriter(w, stat, spec.UID, spec.GID, dest)
	if !dirLike {
		k, err := t.lookup(dest)
		if err != nil {
			return "", err
		}
		dirLike = k == kindDir
	}
	if len(srcs) > 1 && !dirLike {
		return "", userErrorf("When using %s with more than one source file, the destination must be a directory and end with a /", cmd)
	}
	for _, s := range srcs {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		full := filepath.Join(c.dir, filepath.FromSlash(s.rel))
		switch {
		case s.url != "":
			err = c.addURL(ctx, t, cmd, s.url, dest, dirLike)
		case s.isDir:
			err = c.copyTree(ctx, t, full, dest)
		case spec.Extract && isArchive(full):
			err = c.extractArchive(ctx, t, cmd, full, dest)
		default:
			target := dest
			if dirLike {
				target = path.Join(dest, s.name)
			}
			if err = t.ensureDir(path.Dir(target)); err == nil {
				err = c.copyEntry(t, full, target)
			}
		}
		if err != nil {
			return "", err
		}
	}
	return t.close()
}

// sources expands the sources of spec, in order.
func (c *Context) sources(cmd string, spec CopySpec) ([]source, error) {
	var out []source
	for _, raw := range spec.Sources {
		if isURL(raw) {
			if !spec.AllowURL {
				return nil, userErrorf("%s failed: source can't be a URL for %s", cmd, cmd)
			}
			out = append(out, source{url: raw})
			continue
		}
		rel := path.Clean(strings.TrimLeft(raw, "/"))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, userErrorf("%s failed: forbidden path outside the build context: %s ()", cmd, raw)
		}
		matches := []string{rel}
		wild := hasWildcard(rel)
		if wild {
			var err error
			if matches, err = c.glob(cmd, raw, rel); err != nil {
				return nil, err
			}
		}
		for _, m := range matches {
			r, err := resolve(c.dir, m, c.priv)
			switch {
			case errors.Is(err, errOutside):
				return nil, userErrorf("%s failed: forbidden path outside the build context: %s ()", cmd, m)
			case errors.Is(err, fs.ErrNotExist) && wild:
				continue // a symlink that leads nowhere
			case errors.Is(err, fs.ErrNotExist):
				return nil, userErrorf("%s failed: file not found in build context or excluded by .dockerignore: stat %s: file does not exist", cmd, raw)
			case err != nil:
				return nil, userErrorf("%s failed: %v", cmd, err)
			}
			fi, err := os.Stat(filepath.Join(c.dir, filepath.FromSlash(r)))
			if err != nil {
				return nil, err
			}
			out = append(out, source{rel: r, name: path.Base(m), isDir: fi.IsDir()})
		}
	}
	if len(out) == 0 {
		return nil, userErrorf("%s failed: no source files were specified", cmd)
	}
	return out, nil
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func hasWildcard(s string) bool { return strings.ContainsAny(s, "*?[") }

// glob matches pattern, a clean relative path, per component against the
// context; what it returns may not exist (literal components after a
// wildcard).
func (c *Context) glob(cmd, raw, pattern string) ([]string, error) {
	cands := []string{""}
	for _, part := range strings.Split(pattern, "/") {
		var next []string
		for _, pre := range cands {
			if !hasWildcard(part) {
				next = append(next, path.Join(pre, part))
				continue
			}
			r, err := resolve(c.dir, pre, c.priv)
			if errors.Is(err, errOutside) {
				return nil, userErrorf("%s failed: forbidden path outside the build context: %s ()", cmd, pre)
			} else if err != nil {
				continue
			}
			ents, err := os.ReadDir(filepath.Join(c.dir, filepath.FromSlash(r)))
			if err != nil {
				continue // not a directory
			}
			for _, e := range ents {
				if r == "" && e.Name() == c.priv {
					continue
				}
				ok, err := filepath.Match(part, e.Name())
				if err != nil {
					return nil, userErrorf("%s failed: %s: %v", cmd, raw, err)
				}
				if ok {
					next = append(next, path.Join(pre, e.Name()))
				}
			}
		}
		cands = next
	}
	return cands, nil
}
