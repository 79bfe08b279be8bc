package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/docker/distribution/registry/api/errcode"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/manifest"
	istorage "go.podman.io/image/v5/storage"
	"go.podman.io/image/v5/types"
)

// maxConcurrentUploads is Docker's max-concurrent-uploads default.
const maxConcurrentUploads = 5

// PushImage pushes image id to the registry as name, a fully qualified
// tagged reference, with copy.Image from the containers-storage transport
// to docker://. Layers go up gzip-compressed under a Docker schema 2
// manifest, as Docker pushes them. The registry settings are the store's
// (loopback and insecure-registries over plain HTTP).
//
// Unlike pulls, pushes keep containers/image's blob info cache on disk: it
// remembers which compressed blob each layer became in which repository,
// so pushing a layer again is "Layer already exists" rather than a second
// upload.
func (s *Store) PushImage(ctx context.Context, id, name string, auth registry.AuthConfig, progress func(jsonstream.Message)) error {
	tagged, err := imageName("push", name)
	if err != nil {
		return err
	}
	img, err := s.contentImage(id)
	if err != nil {
		return err
	}
	var planned []plannedLayer
	for lid := img.TopLayer; lid != ""; {
		l, err := s.cs.Layer(lid)
		if err != nil {
			return fmt.Errorf("storage: layer %s of image %s: %w", lid, id, classify(err))
		}
		planned = append(planned, plannedLayer{digest: l.UncompressedDigest, size: max(l.UncompressedSize, 0)})
		lid = l.Parent
	}
	sys, err := s.systemContext(ctx, reference.Domain(tagged), PullOptions{Auth: auth, InsecureRegistries: s.opts.InsecureRegistries})
	if err != nil {
		return err
	}
	sys.BlobInfoCacheDir = filepath.Join(s.opts.GraphRoot, "push-cache")
	src, err := istorage.Transport.NewStoreReference(s.cs, nil, img.ID)
	if err != nil {
		return err
	}
	dest, err := docker.NewReference(tagged)
	if err != nil {
		return invalidReference(err)
	}
	policy, err := acceptAnything()
	if err != nil {
		return err
	}
	defer policy.Destroy()

	pp := newPushProgress(progress)
	pp.start(planned, maxConcurrentUploads)
	events := make(chan types.ProgressProperties, 64)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for ev := range events {
			pp.event(ev)
		}
	}()
	man, err := copy.Image(ctx, policy, dest, src, &copy.Options{
		SourceCtx:             sys,
		DestinationCtx:        sys,
		Progress:              events,
		ProgressInterval:      100 * time.Millisecond,
		MaxParallelDownloads:  maxConcurrentUploads,
		RemoveSignatures:      true,
		ForceManifestMIMEType: manifest.DockerV2Schema2MediaType,
	})
	close(events)
	<-drained
	if err != nil {
		s.log.Debug("storage: push failed", "name", tagged.String(), "err", err)
		return classifyPushError(ctx, err, tagged, auth != registry.AuthConfig{})
	}
	d := digest.FromBytes(man)
	// Docker records what a push produced as a digest reference.
	if err := s.recordPull(img.ID, tagged.Name(), d); err != nil {
		return err
	}
	pp.finish(tagged.Tag(), d, len(man))
	return nil
}

// classifyPushError words a failed push: missing or rejected credentials
// (sent says whether there were any) become ErrUnauthorized with a hint,
// the rest keeps containers/image's words. The stream has begun: the class
// no longer matters to the client, the message does.
func classifyPushError(ctx context.Context, err error, named reference.Named, sent bool) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("pushing %s: %w", reference.FamiliarString(named), cerr)
	}
	var ec errcode.Error
	var code errcode.ErrorCode
	var creds docker.ErrUnauthorizedForCredentials
	unauthorized := errors.As(err, &creds)
	switch {
	case errors.As(err, &ec):
		unauthorized = unauthorized || ec.Code == errcode.ErrorCodeUnauthorized || ec.Code == errcode.ErrorCodeDenied
	case errors.As(err, &code):
		unauthorized = unauthorized || code == errcode.ErrorCodeUnauthorized || code == errcode.ErrorCodeDenied
	}
	if unauthorized {
		host := reference.Domain(named)
		if sent {
			return fmt.Errorf("unauthorized: authentication required: %s rejected the credentials (docker login %s)%.0w%.0w", host, host, ErrUnauthorized, errdefs.ErrUnauthenticated)
		}
		return fmt.Errorf("unauthorized: authentication required to push to %s (docker login %s)%.0w%.0w", host, host, ErrUnauthorized, errdefs.ErrUnauthenticated)
	}
	return fmt.Errorf("pushing %s: %w", reference.FamiliarString(named), err)
}

// pushAux is the "aux" of the closing push message, which Docker's CLI
// reads for content trust: Docker's field names, no type in the API module.
type pushAux struct {
	Tag    string `json:"Tag"`
	Digest string `json:"Digest"`
	Size   int    `json:"Size"`
}

func auxMessage(v any) *json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	raw := json.RawMessage(b)
	return &raw
}
