package storage

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// NormalizeReference combines the fromImage and tag parameters of
// POST /images/create as Docker does: fromImage may carry a tag or digest
// itself, a non-empty tag replaces the tag (or, when it parses as a digest,
// becomes the digest), and a bare name gets ":latest". The result is fully
// qualified ("docker.io/library/busybox:latest").
//
// Errors are classed errdefs.ErrInvalidArgument and keep the reference
// library's message ("invalid reference format...") as Docker does, or
// errdefs.ErrPermissionDenied for the reserved name "scratch".
func NormalizeReference(fromImage, tag string) (string, error) {
	// "docker pull -a" sends a trailing ":"; Docker tolerates it.
	named, err := parseRemoteName(strings.TrimSuffix(fromImage, ":"))
	if err != nil {
		return "", err
	}
	if tag != "" {
		if d, derr := digest.Parse(tag); derr == nil {
			named, err = reference.WithDigest(reference.TrimNamed(named), d)
		} else {
			named, err = reference.WithTag(named, tag)
		}
		if err != nil {
			return "", invalidReference(err)
		}
	}
	named, err = pullName(named)
	if err != nil {
		return "", err
	}
	return named.String(), nil
}

// parsePullReference parses what Pull accepts: anything NormalizeReference
// returns, or a short name in Docker's syntax.
func parsePullReference(ref string) (reference.Named, error) {
	named, err := parseRemoteName(ref)
	if err != nil {
		return nil, err
	}
	return pullName(named)
}

// parseRemoteName parses a name to fetch from a registry. Docker's parser
// leaves some names without one: a first component with a dot, so not
// Docker Hub's, that is no host name either ("a_b.c/d" is a path of two
// components). dockerd then asks a registry named "" and fails with Go's
// "no Host in request URL"; refused here as the invalid reference it is.
func parseRemoteName(s string) (reference.Named, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return nil, invalidReference(err)
	}
	if reference.Domain(named) == "" {
		return nil, invalidReference(fmt.Errorf("%w: %q names no registry host", reference.ErrReferenceInvalidFormat, s))
	}
	return named, nil
}

// pullName makes named pullable: a tag or a digest, never both (the digest
// wins, as in Docker), never the reserved "scratch".
func pullName(named reference.Named) (reference.Named, error) {
	if reference.FamiliarName(named) == "scratch" {
		return nil, fmt.Errorf("'scratch' is a reserved name%.0w", errdefs.ErrPermissionDenied)
	}
	return manifestName(named)
}

// manifestName is the name of the manifest named refers to: its digest
// when it has one (a tag beside it is dropped, as in Docker), else its tag
// ("latest" when it has none).
func manifestName(named reference.Named) (reference.Named, error) {
	if c, ok := named.(reference.Canonical); ok {
		if _, tagged := named.(reference.Tagged); tagged {
			d, err := reference.WithDigest(reference.TrimNamed(named), c.Digest())
			if err != nil {
				return nil, invalidReference(err)
			}
			return d, nil
		}
		return named, nil
	}
	return reference.TagNameOnly(named), nil
}

// imageName parses the name op ("tag", "import", "commit", "push",
// "load") gives an image: a reference with a tag and no digest. A name with both would be
// stored but never found again, and Docker refuses the repository
// "sha256", whose "sha256:<hex>" reads as an image ID.
func imageName(op, name string) (reference.NamedTagged, error) {
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return nil, invalidReference(err)
	}
	nt, tagged := named.(reference.NamedTagged)
	_, digested := named.(reference.Digested)
	switch {
	case !tagged:
		return nil, fmt.Errorf("storage: %s name %q has no tag: %w", op, name, errdefs.ErrInvalidArgument)
	case digested:
		return nil, fmt.Errorf("storage: %s name %q has a digest as well as a tag: %w", op, name, errdefs.ErrInvalidArgument)
	case reference.FamiliarName(named) == string(digest.Canonical):
		return nil, fmt.Errorf("refusing to create an ambiguous tag using digest algorithm as name%.0w", errdefs.ErrInvalidArgument)
	}
	return nt, nil
}

// invalidReference classes a reference parse error without changing its
// message: Docker answers exactly "invalid reference format[: ...]".
func invalidReference(err error) error {
	return fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
}

// tagOrDigest is the id of Docker's "Pulling from" message: the tag, or for
// digest references the whole reference.
func tagOrDigest(named reference.Named) string {
	if c, ok := named.(reference.Canonical); ok {
		return c.String()
	}
	if t, ok := named.(reference.Tagged); ok {
		return t.Tag()
	}
	return named.String()
}

// repoPath is the repository path inside its registry ("library/busybox"),
// what Docker prints after "Pulling from".
func repoPath(named reference.Named) string { return reference.Path(named) }
