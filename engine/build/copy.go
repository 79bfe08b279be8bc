package build

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hutch-engine/hutch/engine/build/buildctx"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// copy handles COPY: from the context, or with --from from a stage or an
// image.
func (b *builder) copy(ctx context.Context, c *instructions.CopyCommand) error {
	if err := buildKitCopyFlags(c.Chmod, c.Link, c.ExcludePatterns); err != nil {
		return err
	}
	switch {
	case c.Parents:
		return buildKitOnly("parents")
	case len(c.SourceContents) > 0:
		return userErr("heredocs in COPY require BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled")
	}
	if c.From != "" {
		return b.copyFrom(ctx, c)
	}
	return b.copyContext(ctx, "COPY", c.SourcePaths, c.DestPath, c.Chown, false)
}

// add handles ADD: COPY that also unpacks local archives and downloads
// URLs.
func (b *builder) add(ctx context.Context, c *instructions.AddCommand) error {
	if err := buildKitCopyFlags(c.Chmod, c.Link, c.ExcludePatterns); err != nil {
		return err
	}
	switch {
	case c.KeepGitDir != nil:
		return buildKitOnly("keep-git-dir")
	case c.Checksum != "":
		return buildKitOnly("checksum")
	case c.Unpack != nil:
		return buildKitOnly("unpack")
	case len(c.SourceContents) > 0:
		return userErr("heredocs in ADD require BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled")
	}
	return b.copyContext(ctx, "ADD", c.SourcePaths, c.DestPath, c.Chown, true)
}

// destPath makes a COPY destination absolute against WORKDIR, keeping
// the trailing slash that makes it a directory.
func (b *builder) destPath(dest string) string {
	dir := strings.HasSuffix(dest, "/") || dest == "." || dest == ".."
	if !path.IsAbs(dest) {
		dest = path.Join("/", b.cur.config.WorkingDir, dest)
	}
	dest = path.Clean(dest)
	if dir && dest != "/" {
		dest += "/"
	}
	return dest
}

// stat is Backend.Stat on one container, as buildctx wants it.
func (b *builder) stat(ctx context.Context, id string) buildctx.Stat {
	return func(p string) (bool, bool, error) { return b.be.Stat(ctx, id, p) }
}

// owner resolves --chown in the step's container (0:0 without one).
func (b *builder) owner(ctx context.Context, id, chown string) (int, int, error) {
	if chown == "" {
		return 0, 0, nil
	}
	uid, gid, err := b.be.Owner(ctx, id, chown)
	if err != nil {
		return 0, 0, userErr("unable to convert uid/gid chown string to host mapping: %v", err)
	}
	return uid, gid, nil
}

// copyContext writes files of the build context into a container of the
// current image and commits it.
func (b *builder) copyContext(ctx context.Context, verb string, srcs []string, dest, chown string, add bool) error {
	if b.req.Context == nil {
		return userErr("%s failed: no build context", verb)
	}
	dest = b.destPath(dest)
	id, err := b.create(ctx, b.nopCmd(verb+" "+strings.Join(srcs, " ")+" "+dest), false)
	if err != nil {
		return err
	}
	uid, gid, err := b.owner(ctx, id, chown)
	if err != nil {
		b.removeContainer(ctx, id, false)
		return err
	}
	spec := buildctx.CopySpec{Sources: srcs, Dest: dest, UID: uid, GID: gid, Extract: add, AllowURL: add}
	write := func(w io.Writer) (string, error) { return b.req.Context.Tar(ctx, spec, b.stat(ctx, id), w) }
	kind := "file"
	if len(srcs) > 1 {
		kind = "multi"
	} else if fi, err := os.Stat(filepath.Join(b.req.Context.Dir(), filepath.Clean("/"+srcs[0]))); err == nil && fi.IsDir() {
		kind = "dir"
	}
	return b.copyStep(ctx, id, write, func(sum string) string {
		return fmt.Sprintf("%s %s:%s in %s ", verb, kind, strings.TrimPrefix(sum, "sha256:"), dest)
	})
}

// copyStep ends a COPY or ADD whose tar write makes, in the step's
// container id: from the cache when an earlier build copied the same
// (the checksum of a first pass of write, which text turns into the
// history's instruction), else by extracting it and committing.
func (b *builder) copyStep(ctx context.Context, id string, write func(io.Writer) (string, error), text func(sum string) string) error {
	if !b.req.NoCache {
		sum, err := write(io.Discard)
		if err != nil {
			b.removeContainer(ctx, id, false)
			return err
		}
		hit, err := b.cached(ctx, strings.Join(b.nopCmd(text(sum)), " "))
		if hit || err != nil {
			b.removeContainer(ctx, id, false)
			return err
		}
	}
	sum, err := b.fill(ctx, id, write)
	if err != nil {
		b.removeContainer(ctx, id, false)
		return err
	}
	return b.commit(ctx, id, strings.Join(b.nopCmd(text(sum)), " "), false)
}

// fill streams the tar write produces into the container.
func (b *builder) fill(ctx context.Context, id string, write func(io.Writer) (string, error)) (string, error) {
	pr, pw := io.Pipe()
	type result struct {
		sum string
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := write(pw)
		pw.CloseWithError(err)
		done <- result{sum, err}
	}()
	err := b.be.Extract(ctx, id, pr)
	pr.CloseWithError(fmt.Errorf("extraction ended"))
	r := <-done
	if r.err != nil {
		return "", r.err
	}
	if err != nil {
		return "", err
	}
	return r.sum, nil
}

// mkdirAll makes dir in the container with its missing parents (0755,
// root's), as WORKDIR does.
func (b *builder) mkdirAll(ctx context.Context, id, dir string) error {
	missing, err := missingDirs(b.stat(ctx, id), dir)
	if err != nil || len(missing) == 0 {
		return err
	}
	_, err = b.fill(ctx, id, func(w io.Writer) (string, error) {
		tw := tar.NewWriter(w)
		for _, d := range missing {
			if err := tw.WriteHeader(dirHeader(d, 0, 0)); err != nil {
				return "", err
			}
		}
		return "", tw.Close()
	})
	return err
}

// missingDirs lists dir and those of its parents that do not exist,
// outermost first. A parent that exists as a file is an error.
func missingDirs(stat buildctx.Stat, dir string) ([]string, error) {
	var missing []string
	for d := path.Clean(dir); d != "/"; d = path.Dir(d) {
		exists, isDir, err := stat(d)
		if err != nil {
			return nil, err
		}
		if exists {
			if !isDir {
				return nil, userErr("cannot make directory %s: %s is not a directory", dir, d)
			}
			break
		}
		missing = append([]string{d}, missing...)
	}
	return missing, nil
}

func dirHeader(abs string, uid, gid int) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(abs, "/") + "/", Mode: 0o755, Uid: uid, Gid: gid}
}
