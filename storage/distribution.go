package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/distribution/registry/api/errcode"
	v2 "github.com/docker/distribution/registry/api/v2"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/pkg/blobinfocache/none"
	"go.podman.io/image/v5/types"
)

// InspectDistribution asks ref's registry for the manifest ref names, as
// GET /distribution/{name}/json does for docker: its descriptor (media
// type, digest, size) and the platforms it is for. Like dockerd, the
// platforms are the entries of a manifest list or OCI index, or the
// os/architecture of a Docker schema 2 image's config; an OCI image
// manifest reports none. auth is X-Registry-Auth's (never logged); the
// store's insecure registries and mirrors apply as for a pull.
//
// Errors are Docker's: a reference that is not a name is
// errdefs.ErrInvalidArgument, a full image ID is unclassed ("no manifest
// found for full image ID"), an unknown tag or repository is
// errdefs.ErrNotFound with the registry's message ("manifest unknown:
// manifest unknown"), a registry refusal errdefs.ErrUnauthorized or
// ErrPermissionDenied.
func (s *Store) InspectDistribution(ctx context.Context, ref string, auth registry.AuthConfig) (registry.DistributionInspect, error) {
	var out registry.DistributionInspect
	parsed, err := reference.ParseAnyReference(ref)
	if err != nil {
		return out, invalidReference(err)
	}
	named, ok := parsed.(reference.Named)
	if !ok {
		if _, ok := parsed.(reference.Digested); ok {
			return out, errors.New("no manifest found for full image ID")
		}
		return out, fmt.Errorf("unknown image reference format: %s%.0w", ref, errdefs.ErrInvalidArgument)
	}
	if named, err = manifestName(named); err != nil {
		return out, err
	}
	sys, err := s.systemContext(ctx, reference.Domain(named), s.registryOptions(auth))
	if err != nil {
		return out, err
	}
	srcRef, err := docker.NewReference(named)
	if err != nil {
		return out, invalidReference(err)
	}
	src, err := srcRef.NewImageSource(ctx, sys)
	if err != nil {
		return out, classifyRegistryAnswer(err)
	}
	defer src.Close()
	blob, mime, err := src.GetManifest(ctx, nil)
	if err != nil {
		return out, classifyRegistryAnswer(err)
	}
	switch manifest.NormalizedMIMEType(mime) {
	case manifest.DockerV2Schema1MediaType, manifest.DockerV2Schema1SignedMediaType:
		return out, schema1Error(named)
	}
	d, err := manifest.Digest(blob)
	if err != nil {
		return out, err
	}
	out.Descriptor = ocispec.Descriptor{MediaType: mime, Digest: d, Size: int64(len(blob))}
	out.Platforms, err = manifestPlatforms(ctx, src, blob, mime)
	return out, err
}

// manifestPlatforms lists the platforms of a manifest as dockerd does:
// every entry of a list or index, the config's os/architecture for a
// Docker schema 2 manifest (none when the config cannot be read or names
// neither), nothing for other manifests.
func manifestPlatforms(ctx context.Context, src types.ImageSource, blob []byte, mime string) ([]ocispec.Platform, error) {
	if manifest.MIMETypeIsMultiImage(mime) {
		list, err := manifest.ListFromBlob(blob, mime)
		if err != nil {
			return nil, fmt.Errorf("parsing manifest list: %w", err)
		}
		var out []ocispec.Platform
		for _, d := range list.Instances() {
			inst, err := list.Instance(d)
			if err != nil {
				return nil, err
			}
			var p ocispec.Platform
			if inst.ReadOnly.Platform != nil {
				p = *inst.ReadOnly.Platform
			}
			out = append(out, p)
		}
		return out, nil
	}
	if manifest.NormalizedMIMEType(mime) != manifest.DockerV2Schema2MediaType {
		return nil, nil
	}
	m, err := manifest.Schema2FromManifest(blob)
	if err != nil {
		return nil, fmt.Errorf("parsing manifest: %w", err)
	}
	p, ok := configPlatform(ctx, src, m.ConfigDescriptor.Digest)
	if !ok {
		return nil, nil
	}
	return []ocispec.Platform{p}, nil
}

// configPlatform reads the platform fields of the image config d.
func configPlatform(ctx context.Context, src types.ImageSource, d digest.Digest) (ocispec.Platform, bool) {
	rc, _, err := src.GetBlob(ctx, types.BlobInfo{Digest: d, Size: -1}, none.NoCache)
	if err != nil {
		return ocispec.Platform{}, false
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxConfigSize))
	if err != nil {
		return ocispec.Platform{}, false
	}
	var p ocispec.Platform
	if json.Unmarshal(b, &p) != nil || (p.OS == "" && p.Architecture == "") {
		return ocispec.Platform{}, false
	}
	return p, true
}

// classifyRegistryAnswer classes a registry's answer to a distribution
// inspect or a search as dockerd's distribution endpoint does: the status of the registry's error code
// (unknown manifest or repository 404, unauthorized 401, denied 403) and
// its "code: message" text.
func classifyRegistryAnswer(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ec := registryError(err)
	switch ec.Code {
	case v2.ErrorCodeManifestUnknown, v2.ErrorCodeNameUnknown:
		return fmt.Errorf("%s%.0w", ec.Error(), errdefs.ErrNotFound)
	case errcode.ErrorCodeUnauthorized:
		return fmt.Errorf("%s%.0w", ec.Error(), errdefs.ErrUnauthenticated)
	case errcode.ErrorCodeDenied:
		return fmt.Errorf("%s%.0w", ec.Error(), errdefs.ErrPermissionDenied)
	}
	var creds docker.ErrUnauthorizedForCredentials
	if errors.As(err, &creds) {
		return fmt.Errorf("%w%.0w", err, errdefs.ErrUnauthenticated)
	}
	var status docker.UnexpectedHTTPStatusError
	if errors.As(err, &status) && status.StatusCode == 404 {
		return fmt.Errorf("%w%.0w", err, errdefs.ErrNotFound)
	}
	return err
}
