package buildctx

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// Remote contexts are what POST /build's remote= names instead of a
// context in the request's body, with dockerd's rules: a git repository
// (an http(s) URL whose path ends in ".git", with an optional
// "#ref:subdir", or one starting with git://, git@ or github.com/), or
// an http(s) URL of a tar archive (plain, gzip, bzip2, xz) or of a
// Dockerfile alone (text/plain), which is then the whole context.

// ClientSession is the remote of BuildKit's sessions, which the classic
// builder cannot serve.
const ClientSession = "client-session"

// Remote fetches the context remote names and returns it as an archive
// for Extract. A Dockerfile alone is returned as an archive of one file
// named dockerfile ("" means "Dockerfile"). A git checkout is made in a
// directory under scratch, removed when the archive is closed. Errors
// carry the classes dockerd gives them (errdefs): a URL that answers 404
// is not found, one that cannot be reached a system error, a remote that
// is no URL an invalid argument.
func Remote(ctx context.Context, remote, dockerfile, scratch string) (io.ReadCloser, error) {
	switch {
	case remote == ClientSession:
		return nil, errdefs.ErrInvalidArgument.WithMessage("experimental session with v1 builder is no longer supported, use builder version v2 (BuildKit) instead")
	case IsGitURL(remote):
		return gitContext(ctx, remote, scratch)
	case isURL(remote):
		return urlContext(ctx, remote, dockerfile)
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("remoteURL (%s) could not be recognized as URL", remote))
}

// gitURLPath is an http(s) URL of a git repository: ".git" at the end of
// its path, before any fragment.
var gitURLPath = regexp.MustCompile(`\.git(?:#.+)?$`)

// IsGitURL tells whether remote names a git repository, by dockerd's
// rules (github.com/ is its legacy short form of https://github.com/).
func IsGitURL(remote string) bool {
	if isURL(remote) && gitURLPath.MatchString(remote) {
		return true
	}
	for _, prefix := range []string{"git://", "github.com/", "git@"} {
		if strings.HasPrefix(remote, prefix) {
			return true
		}
	}
	return false
}

// preambleLen is how much of an answer is looked at to tell a Dockerfile
// from an archive when the server does not say.
const preambleLen = 512

// acceptedType is the content types dockerd takes for a remote context.
var acceptedType = regexp.MustCompile(`(?:application/(?:(?:x\-)?tar|octet\-stream|((?:x\-)?(?:gzip|bzip2?|xz)))|(?:text/plain))`)

// urlContext downloads raw: an archive is returned as it streams, a
// Dockerfile alone as an archive of that one file.
func urlContext(ctx context.Context, raw, dockerfile string) (io.ReadCloser, error) {
	resp, err := getRemote(ctx, raw)
	if err != nil {
		return nil, err
	}
	preamble := make([]byte, preambleLen)
	n, err := io.ReadFull(resp.Body, preamble)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		resp.Body.Close()
		return nil, errdefs.ErrUnknown.WithMessage(fmt.Sprintf("error downloading remote context %s: %v", raw, err))
	}
	preamble = preamble[:n]
	if n == 0 {
		resp.Body.Close()
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("error detecting content type for remote %s: empty response", raw))
	}
	header := resp.Header.Get("Content-Type")
	ct := header
	if ct == "" || ct == "application/octet-stream" {
		ct = http.DetectContentType(preamble)
	}
	switch kind := acceptedType.FindString(ct); {
	case kind == "":
		resp.Body.Close()
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("error detecting content type for remote %s: unsupported Content-Type %q", raw, header))
	case kind == "text/plain":
		defer resp.Body.Close()
		content, err := io.ReadAll(io.MultiReader(bytes.NewReader(preamble), resp.Body))
		if err != nil {
			return nil, errdefs.ErrUnknown.WithMessage(fmt.Sprintf("error downloading remote context %s: %v", raw, err))
		}
		return dockerfileArchive(dockerfile, content)
	}
	return readCloser{io.MultiReader(bytes.NewReader(preamble), resp.Body), resp.Body}, nil
}

// getRemote GETs raw; an answer of 400 or more is an error of the class
// its status says, with its body in the message, as dockerd reports it.
func getRemote(ctx context.Context, raw string) (*http.Response, error) {
	fail := func(class func(string) error, detail string) error {
		return class(fmt.Sprintf("error downloading remote context %s: %s", raw, detail))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fail(errdefs.ErrInvalidArgument.WithMessage, err.Error())
	}
	// The client ADD's downloads use: a Transport made per request would
	// keep its idle connection open for good.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(errdefs.ErrUnknown.WithMessage, err.Error())
	}
	if resp.StatusCode < http.StatusBadRequest {
		return resp, nil
	}
	class, detail := StatusError(raw, resp)
	return nil, fail(class, detail)
}

// StatusError reads a failed download's response as Docker reports it:
// the status and the body the server sent, and the error class the status
// makes (a 404 is not found, 400 a bad parameter, 401 and 403 what they
// say). It closes the body.
func StatusError(address string, resp *http.Response) (class func(string) error, detail string) {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	detail = fmt.Sprintf("failed to GET %s with status %s: %s", address, resp.Status, bytes.TrimSpace(body))
	switch resp.StatusCode {
	case http.StatusNotFound:
		return errdefs.ErrNotFound.WithMessage, detail
	case http.StatusBadRequest:
		return errdefs.ErrInvalidArgument.WithMessage, detail
	case http.StatusUnauthorized:
		return errdefs.ErrUnauthenticated.WithMessage, detail
	case http.StatusForbidden:
		return errdefs.ErrPermissionDenied.WithMessage, detail
	}
	return errdefs.ErrUnknown.WithMessage, detail
}

// dockerfileArchive is an archive of one file, the Dockerfile.
func dockerfileArchive(name string, content []byte) (io.ReadCloser, error) {
	if name == "" {
		name = "Dockerfile"
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Now(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, userErrorf("the Dockerfile's name %q: %v", name, err)
	}
	tw.Write(content)
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

// readCloser reads from r and closes c.
type readCloser struct {
	r io.Reader
	c io.Closer
}

func (rc readCloser) Read(p []byte) (int, error) { return rc.r.Read(p) }
func (rc readCloser) Close() error               { return rc.c.Close() }
