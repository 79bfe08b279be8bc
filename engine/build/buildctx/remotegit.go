package buildctx

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
)

// gitRemote is a git build context: the repository, the ref to check out
// ("" for the remote's HEAD) and the directory of the checkout that is
// the context ("" for its root).
type gitRemote struct {
	repo, ref, subdir string
}

// parseGitRemote splits a git remote as dockerd does: a URL without a
// transport gets https://, and its fragment is "ref:subdir". A git@
// address is not a URL: its fragment is cut by hand. Unlike dockerd,
// which fetches "master" when no ref is given, the remote's HEAD is
// fetched, so repositories whose default branch has another name build.
func parseGitRemote(remote string) (gitRemote, error) {
	if !hasGitTransport(remote) {
		remote = "https://" + remote
	}
	var g gitRemote
	var fragment string
	if strings.HasPrefix(remote, "git@") {
		g.repo, fragment, _ = strings.Cut(remote, "#")
	} else {
		u, err := url.Parse(remote)
		if err != nil {
			return g, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid git URL %s: %v", remote, err))
		}
		fragment, u.Fragment, u.RawFragment = u.Fragment, "", ""
		g.repo = u.String()
	}
	g.ref, g.subdir, _ = strings.Cut(fragment, ":")
	if strings.HasPrefix(g.ref, "-") {
		return g, errdefs.ErrInvalidArgument.WithMessage("invalid refspec: " + g.ref)
	}
	return g, nil
}

func hasGitTransport(s string) bool {
	if strings.HasPrefix(s, "git@") {
		return true
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "git", "http", "https", "ssh":
		return true
	}
	return false
}

// gitContext checks remote out into a new directory under scratch and
// returns the archive of the context's directory in it.
func gitContext(ctx context.Context, remote, scratch string) (io.ReadCloser, error) {
	g, err := parseGitRemote(remote)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errdefs.ErrUnavailable.WithMessage("a git build context needs git, which is not installed: " + err.Error())
	}
	root, err := os.MkdirTemp(scratch, "git-")
	if err != nil {
		return nil, err
	}
	dir, err := g.checkout(ctx, root)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(dir, pw)) }()
	return readCloser{pr, closerFunc(func() error {
		pr.Close()
		return os.RemoveAll(root)
	})}, nil
}

// checkout fetches g's ref into a new repository at root (shallow, then
// whole when the server cannot serve a shallow fetch), checks it out and
// returns the directory of the context.
func (g gitRemote) checkout(ctx context.Context, root string) (string, error) {
	ref := g.ref
	if ref == "" {
		ref = "HEAD"
	}
	if out, err := g.git(ctx, root, "init", "-q"); err != nil {
		return "", fmt.Errorf("failed to init repo at %s: %w: %s", root, err, out)
	}
	if out, err := g.git(ctx, root, "remote", "add", "origin", g.repo); err != nil {
		return "", fmt.Errorf("failed add origin repo at %s: %w: %s", g.repo, err, out)
	}
	if _, err := g.git(ctx, root, "fetch", "-q", "--depth", "1", "origin", "--", ref); err != nil {
		if out, err := g.git(ctx, root, "fetch", "-q", "origin", "--", ref); err != nil {
			return "", fmt.Errorf("error fetching: %w: %s", err, out)
		}
	}
	if out, err := g.git(ctx, root, "checkout", "-q", "FETCH_HEAD"); err != nil {
		return "", fmt.Errorf("error checking out %s: %w: %s", ref, err, out)
	}
	if out, err := g.git(ctx, root, "submodule", "update", "-q", "--init", "--recursive", "--depth=1"); err != nil {
		return "", fmt.Errorf("error initializing submodules: %w: %s", err, out)
	}
	if g.subdir == "" {
		return root, nil
	}
	rel, err := resolve(root, filepath.ToSlash(g.subdir), "")
	if errors.Is(err, errOutside) {
		return "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("error setting git context, %q not within git root", g.subdir))
	}
	dir := filepath.Join(root, rel)
	if fi, serr := os.Stat(dir); err != nil || serr != nil || !fi.IsDir() {
		return "", errdefs.ErrInvalidArgument.WithMessage("error setting git context, not a directory: " + g.subdir)
	}
	return dir, nil
}

// git runs git in dir as dockerd does: no system or user configuration,
// no file:// submodules, no protocols the user did not ask for, and
// never a prompt for credentials (the engine has no terminal).
func (g gitRemote) git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "protocol.file.allow=never"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_PROTOCOL_FROM_USER=0", "GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1", "HOME=/dev/null")
	out, err := cmd.CombinedOutput()
	return []byte(strings.TrimSpace(string(out))), err
}

// tarDir writes the tree at dir as an archive: regular files,
// directories and symlinks (as links), names relative to dir.
func tarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case !fi.Mode().IsRegular() && !fi.IsDir():
			return nil
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
