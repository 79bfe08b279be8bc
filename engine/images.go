package engine

import (
	"context"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
)

// PullRequest is POST /images/create?fromImage=…
type PullRequest struct {
	FromImage, Tag, Platform string
	Auth                     registry.AuthConfig
}

// ImagePull pulls an image, reporting Docker's progress stream.
func (e *Engine) ImagePull(ctx context.Context, req PullRequest, progress func(jsonstream.Message)) error {
	if e.images == nil {
		return errdefs.ErrUnavailable.WithMessage("no image store")
	}
	return e.images.PullImage(ctx, req.FromImage, req.Tag, req.Auth, req.Platform, progress)
}
