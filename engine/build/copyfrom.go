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
	for _, s := range c.SourcePaths {
		if strings.ContainsAny(s, "*?[") {
			return userErr("COPY --from with wildcards is not supported by hutch yet: %s", s)
		}
	}
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
	destDir := strings.HasSuffix(dest, "/") || len(srcs) > 1
	dest = path.Clean(dest)
	if !destDir {
		exists, isDir, err := s.stat(dest)
		if err != nil {
			return err
		}
		destDir = exists && isDir
	}
	for _, src := range srcs {
		p := path.Join("/", src)
		if p == "/" {
			return userErr("COPY --from of / is not supported by hutch yet")
		}
		rc, err := s.b.be.Archive(ctx, s.src, p)
		if err != nil {
			return userErr("COPY failed: stat %s: file does not exist in %s", p, "the source image")
		}
		err = s.rewrite(rc, path.Base(p), dest, destDir)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// rewrite copies one source's archive (top entry named base): a
// directory's contents go into dest, a file to dest or into it.
func (s *stageCopy) rewrite(r io.Reader, base, dest string, destDir bool) error {
	tr := tar.NewReader(r)
	top := true
	var target string // where the top entry lands
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the source: %w", err)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		if top {
			top = false
			switch {
			case hdr.Typeflag == tar.TypeDir:
				target = dest
			case destDir:
				target = path.Join(dest, base)
			default:
				target = dest
			}
			if err := s.parents(target, hdr.Typeflag == tar.TypeDir); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeDir {
				continue
			}
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(name, base), "/")
		out := path.Join(target, rel)
		if hdr.Typeflag == tar.TypeLink {
			lr := strings.TrimPrefix(strings.TrimPrefix(path.Clean(hdr.Linkname), base), "/")
			hdr.Linkname = strings.TrimPrefix(path.Join(target, lr), "/")
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
		if _, err := io.Copy(io.MultiWriter(s.tw, s.sum), tr); err != nil {
			return err
		}
	}
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
