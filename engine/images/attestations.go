package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// BuildKit stores a platform image's attestations as a sibling manifest
// in the image's index: an entry annotated as an attestation manifest
// whose reference digest is the platform manifest's, with one layer per
// in-toto statement, each annotated with its predicate type. Docker's
// containerd image store reads them so; an image of one manifest has
// none.

const (
	refTypeKey         = "vnd.docker.reference.type"
	refDigestKey       = "vnd.docker.reference.digest"
	attestationRefType = "attestation-manifest"
	predicateTypeKey   = "in-toto.io/predicate-type"
	dockerManifestType = "application/vnd.docker.distribution.manifest.v2+json"
)

// AttestationRequest is GET /images/{name}/attestations: the platform
// whose attestations are wanted (nil: the host's), the predicate types
// to keep (none: all), and whether to include each statement's body.
type AttestationRequest struct {
	Platform       *ocispec.Platform
	PredicateTypes []string
	Statement      bool
}

// ImageAttestations lists the in-toto statements attached to ref's image
// for req.Platform, as Docker's containerd image store does: nil for an
// image that is not an OCI index, for a platform without an attestation
// manifest, or when no statement matches; errdefs.ErrNotFound when the
// index has no manifest for the platform.
func (s *Service) ImageAttestations(ctx context.Context, ref string, req AttestationRequest) ([]image.AttestationStatement, error) {
	store, err := s.imageStore()
	if err != nil {
		return nil, err
	}
	img, err := store.LookupImage(ctx, ref)
	if err != nil {
		return nil, err
	}
	if img.Descriptor == nil || img.Descriptor.MediaType != ocispec.MediaTypeImageIndex {
		return nil, nil
	}
	blob := func(d digest.Digest) ([]byte, error) {
		b, err := store.IndexBlob(ctx, img.ID, d)
		if err != nil {
			return nil, keepNotFound(fmt.Errorf("reading blob %s: %w", d, err))
		}
		return b, nil
	}
	b, err := blob(img.Descriptor.Digest)
	if err != nil {
		return nil, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("unmarshaling image index: %w", err)
	}
	platform := req.Platform
	if platform == nil {
		p := platforms.Normalize(platforms.DefaultSpec())
		platform = &p
	}
	target, err := platformManifest(idx, *platform)
	if err != nil {
		return nil, fmt.Errorf("resolving image manifest for platform %+v: %w", platform, err)
	}
	att := attestationOf(idx, target.Digest)
	if att == nil {
		return nil, nil
	}
	mb, err := blob(att.Digest)
	if err != nil {
		return nil, err
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(mb, &man); err != nil {
		return nil, fmt.Errorf("unmarshaling manifest %s: %w", att.Digest, err)
	}
	var out []image.AttestationStatement
	for _, layer := range man.Layers {
		pt := layer.Annotations[predicateTypeKey]
		if pt == "" || (len(req.PredicateTypes) > 0 && !slices.Contains(req.PredicateTypes, pt)) {
			continue
		}
		st := image.AttestationStatement{Descriptor: layer, PredicateType: pt}
		if req.Statement {
			data, err := store.IndexBlob(ctx, img.ID, layer.Digest)
			if errors.Is(err, errdefs.ErrNotFound) {
				return nil, keepNotFound(fmt.Errorf("attestation statement %s is not available locally: %w", layer.Digest, err))
			}
			if err != nil {
				return nil, fmt.Errorf("failed to read attestation statement %s: %w", layer.Digest, err)
			}
			raw := json.RawMessage(data)
			st.Statement = &raw
		}
		out = append(out, st)
	}
	return out, nil
}

// platformManifest picks idx's image manifest for platform as Docker
// does for attestations: containerd's (non-strict) matching, an entry
// without a platform matching any but ranking last.
func platformManifest(idx ocispec.Index, platform ocispec.Platform) (ocispec.Descriptor, error) {
	match := platforms.Only(platform)
	var found []ocispec.Descriptor
	for _, d := range idx.Manifests {
		if d.MediaType != ocispec.MediaTypeImageManifest && d.MediaType != dockerManifestType {
			continue
		}
		if d.Platform == nil || match.Match(*d.Platform) {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return ocispec.Descriptor{}, notFoundVerbatim{fmt.Errorf("no manifest for platform %s: not found", platforms.FormatAll(platform))}
	}
	sort.SliceStable(found, func(i, j int) bool {
		switch {
		case found[i].Platform == nil:
			return false
		case found[j].Platform == nil:
			return true
		}
		return match.Less(*found[i].Platform, *found[j].Platform)
	})
	return found[0], nil
}

// attestationOf is idx's attestation manifest for manifest d, or nil.
func attestationOf(idx ocispec.Index, d digest.Digest) *ocispec.Descriptor {
	for i, m := range idx.Manifests {
		if m.Annotations[refTypeKey] == attestationRefType && m.Annotations[refDigestKey] == d.String() {
			return &idx.Manifests[i]
		}
	}
	return nil
}

// keepNotFound is err, when it is errdefs.ErrNotFound, classed so that
// its message keeps the "not found" ending Docker's has.
func keepNotFound(err error) error {
	if !errors.Is(err, errdefs.ErrNotFound) {
		return err
	}
	return notFoundVerbatim{errors.New(err.Error())}
}

// notFoundVerbatim is classed errdefs.ErrNotFound by its NotFound method
// (errdefs.IsNotFound), not by wrapping the sentinel, so that the API
// keeps its message's "not found" ending, as Docker's message has it.
type notFoundVerbatim struct{ err error }

func (e notFoundVerbatim) Error() string { return e.err.Error() }
func (e notFoundVerbatim) Unwrap() error { return e.err }
func (e notFoundVerbatim) NotFound()     {}
