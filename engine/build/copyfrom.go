package build

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	containertypes "github.com/moby/moby/api/types/container"
)

// copyFrom handles COPY --from: the sources are paths in an earlier
// stage's image, or in an image. Every entry written belongs to --chown's
// owner, root without it, as in Docker's classic builder.
func (b *builder) copyFrom(ctx context.Context, c *instructions.CopyCommand) error {
	from, err := b.baseImage(ctx, c.From)
	if err != nil {
		return err
	}
	src, err := b.be.Create(ctx, &containertypes.Config{Image: from.ID, Cmd: b.nopCmd("COPY --from")}, &containertypes.HostConfig{})
	if err != nil {
		return fmt.Errorf("creating a container of %s: %w", c.From, err)
	}
	defer b.be.Remove(context.WithoutCancel(ctx), src)
	dest := b.destPath(c.DestPath)
	id, err := b.create(ctx, b.nopCmd("COPY --from="+c.From+" "+strings.Join(c.SourcePaths, " ")+" "+dest), false)
	if err != nil {
		return err
	}
	uid, gid, err := b.owner(ctx, id, c.Chown)
	if err != nil {
		b.removeContainer(ctx, id, false)
		return err
	}
	write := func(w io.Writer) (string, error) {
		cp := &stageCopy{b: b, src: src, stat: b.stat(ctx, id), uid: uid, gid: gid, tw: tar.NewWriter(w), sum: sha256.New()}
		if err := cp.run(ctx, c.SourcePaths, dest); err != nil {
			return "", err
		}
		return "sha256:" + hex.EncodeToString(cp.sum.Sum(nil)), cp.tw.Close()
	}
	return b.copyStep(ctx, id, write, func(sum string) string {
		return fmt.Sprintf("COPY from %s:%s in %s ", c.From, strings.TrimPrefix(sum, "sha256:"), dest)
	})
}

// stageCopy rewrites the archives of paths in the source container into
// one tar extracted at / of the step's container.
type stageCopy struct {
	b        *builder
	src      string
	stat     func(string) (bool, bool, error)
	uid, gid int
	tw       *tar.Writer
	sum      hashWriter
	made     map[string]bool
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func (s *stageCopy) run(ctx context.Context, srcs []string, dest string) error {
	s.made = map[string]bool{}
	type source struct{ dir, pattern, path string }
	var sources []source
	files := 0
	for _, src := range srcs {
		p := path.Join("/", src)
		switch {
		case p == "/":
			return userErr("COPY --from of / is not supported by hutch yet")
		case strings.ContainsAny(path.Dir(p), "*?["):
			return userErr("COPY --from takes wildcards in the last element of a path only: %s", src)
		case strings.ContainsAny(path.Base(p), "*?["):
			dir, pattern := path.Dir(p), path.Base(p)
			if _, err := path.Match(pattern, ""); err != nil {
				return userErr("COPY failed: bad source pattern %s", src)
			}
			if dir == "/" {
				return userErr("COPY --from with a wildcard in / is not supported by hutch yet: %s", src)
			}
			n, err := s.matches(ctx, dir, pattern)
			if err != nil {
				return err
			}
			files += n
			sources = append(sources, source{dir: dir, pattern: pattern})
		default:
			files++
			sources = append(sources, source{path: p})
		}
	}
	if files == 0 {
		return userErr("COPY failed: no source files were specified")
	}
	destDir := strings.HasSuffix(dest, "/") || files > 1
	dest = path.Clean(dest)
	if !destDir {
		exists, isDir, err := s.stat(dest)
		if err != nil {
			return err
		}
		destDir = exists && isDir
	}
	for _, src := range sources {
		p := src.path
		if p == "" {
			p = src.dir
		}
		rc, err := s.b.be.Archive(ctx, s.src, p)
		if err != nil {
			return userErr("COPY failed: stat %s: file does not exist in the source image", p)
		}
		err = s.rewrite(rc, path.Base(p), src.pattern, dest, destDir)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// matches counts the entries of dir in the source whose names match
// pattern.
func (s *stageCopy) matches(ctx context.Context, dir, pattern string) (int, error) {
	rc, err := s.b.be.Archive(ctx, s.src, dir)
	if err != nil {
		return 0, userErr("COPY failed: stat %s: file does not exist in the source image", dir)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	base, n := path.Base(dir), 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("reading the source: %w", err)
		}
		if child, ok := childOf(hdr.Name, base); ok && child == entryName(hdr.Name) {
			if m, _ := path.Match(pattern, path.Base(child)); m {
				n++
			}
		}
	}
}

func entryName(name string) string { return strings.TrimSuffix(path.Clean(name), "/") }

// childOf is the entry under base that name is or lies in ("base/x/y":
// "base/x").
func childOf(name, base string) (string, bool) {
	rest, ok := strings.CutPrefix(entryName(name), base+"/")
	if !ok || rest == "" {
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	return base + "/" + first, true
}

// tree is one source being copied: its top entry's name in the archive,
// and where that lands.
type tree struct{ top, target string }

// rewrite copies a source's archive (top entry named base): a
// directory's contents go into dest, a file to dest or into it. With a
// pattern, the sources are the entries directly under base that match
// it, each copied so.
func (s *stageCopy) rewrite(r io.Reader, base, pattern, dest string, destDir bool) error {
	tr := tar.NewReader(r)
	var cur *tree
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the source: %w", err)
		}
		name := entryName(hdr.Name)
		top := name
		switch {
		case pattern != "":
			child, ok := childOf(name, base)
			if m, _ := path.Match(pattern, path.Base(child)); !ok || !m {
				continue
			}
			top = child
		case cur != nil && strings.HasPrefix(name, cur.top+"/"):
			// Inside the source's tree: a directory's entries follow it.
			top = cur.top
		}
		if cur == nil || cur.top != top {
			// The first entry of a tree is its top.
			t := tree{top: top, target: dest}
			if hdr.Typeflag != tar.TypeDir && destDir {
				t.target = path.Join(dest, path.Base(top))
			}
			if err := s.parents(t.target, hdr.Typeflag == tar.TypeDir); err != nil {
				return err
			}
			cur = &t
			if hdr.Typeflag == tar.TypeDir {
				continue
			}
		}
		if err := s.put(cur, hdr, tr, name); err != nil {
			return err
		}
	}
}

// put writes one entry of tree t, renamed to where it lands.
func (s *stageCopy) put(t *tree, hdr *tar.Header, r io.Reader, name string) error {
	rel := strings.TrimPrefix(strings.TrimPrefix(name, t.top), "/")
	out := path.Join(t.target, rel)
	if hdr.Typeflag == tar.TypeLink {
		lr := strings.TrimPrefix(strings.TrimPrefix(path.Clean(hdr.Linkname), t.top), "/")
		hdr.Linkname = strings.TrimPrefix(path.Join(t.target, lr), "/")
	}
	hdr.Name = strings.TrimPrefix(out, "/")
	if hdr.Typeflag == tar.TypeDir {
		hdr.Name += "/"
	}
	hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = s.uid, s.gid, "", ""
	fmt.Fprintf(s.sum, "%s %c %o %s %d\n", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname, hdr.Size)
	if err := s.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := io.Copy(io.MultiWriter(s.tw, s.sum), r)
	return err
}

// parents writes directory entries for target's missing parents, and
// for target itself when it is a directory.
func (s *stageCopy) parents(target string, isDir bool) error {
	dir := target
	if !isDir {
		dir = path.Dir(target)
	}
	missing, err := missingDirs(s.stat, dir)
	if err != nil {
		return err
	}
	for _, d := range missing {
		if s.made[d] {
			continue
		}
		s.made[d] = true
		if err := s.tw.WriteHeader(dirHeader(d, s.uid, s.gid)); err != nil {
			return err
		}
	}
	return nil
}
