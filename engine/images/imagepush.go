package images

import (
	"context"
	"fmt"
	"slices"
	"strings"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// PushRequest is POST /images/{name}/push?tag=…
type PushRequest struct {
	// Name is the repository, possibly with a tag; Tag (the query
	// parameter) replaces that tag. With neither, every tag of the
	// repository is pushed, as docker push --all-tags does.
	Name, Tag string
	Auth      registry.AuthConfig
	// Platform, when set, is the platform the image must be of.
	Platform *ocispec.Platform
}

// ImagePush answers docker push with Docker's progress stream: "The push
// refers to repository […]", then per layer "Preparing", "Pushing",
// "Pushed" or "Layer already exists", then "<tag>: digest: … size: …".
// An unknown image or bad name is an error before the first message, which
// the API answers as a plain HTTP error.
func (s *Service) ImagePush(ctx context.Context, req PushRequest, progress func(jsonstream.Message)) error {
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	named, err := reference.ParseNormalizedNamed(req.Name)
	if err != nil {
		return InvalidReference(err)
	}
	if _, ok := named.(reference.Digested); ok {
		return errdefs.ErrInvalidArgument.WithMessage("cannot push a digest reference: push a tag")
	}
	if reference.Domain(named) == "" {
		// "a_b.c/d": a dot in the first component, so not Docker Hub's,
		// but no host name either (as pulls refuse it).
		return InvalidReference(fmt.Errorf("%w: %q names no registry host", reference.ErrReferenceInvalidFormat, req.Name))
	}
	if req.Tag != "" {
		if named, err = reference.WithTag(reference.TrimNamed(named), req.Tag); err != nil {
			return InvalidReference(err)
		}
	}
	type push struct{ id, name string }
	var pushes []push
	if nt, ok := named.(reference.NamedTagged); ok {
		img, err := store.LookupImage(ctx, nt.String())
		if err != nil {
			if errdefs.IsNotFound(err) {
				return noLocalTag(named)
			}
			return err
		}
		if err := checkPlatform(img, nt.String(), req.Platform); err != nil {
			return err
		}
		pushes = append(pushes, push{img.ID, nt.String()})
	} else {
		imgs, err := store.ListImages(ctx)
		if err != nil {
			return err
		}
		for _, img := range imgs {
			for _, r := range parseRefs(img.Refs) {
				if nt, ok := r.(reference.NamedTagged); ok && nt.Name() == named.Name() {
					if err := checkPlatform(&img, nt.String(), req.Platform); err != nil {
						return err
					}
					pushes = append(pushes, push{img.ID, nt.String()})
				}
			}
		}
		if len(pushes) == 0 {
			return noLocalTag(named)
		}
		slices.SortFunc(pushes, func(a, b push) int { return strings.Compare(a.name, b.name) })
	}
	progress(jsonstream.Message{Status: "The push refers to repository [" + named.Name() + "]"})
	for _, p := range pushes {
		if err := store.PushImage(ctx, p.id, p.name, req.Auth, progress); err != nil {
			return err
		}
		s.imageEvent(eventtypes.ActionPush, p.name, p.name)
	}
	return nil
}

// noLocalTag is Docker's error for pushing a name no image has.
func noLocalTag(named reference.Named) error {
	return errdefs.ErrNotFound.WithMessage("An image does not exist locally with the tag: " + reference.FamiliarName(named))
}
