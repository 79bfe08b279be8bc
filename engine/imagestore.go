package engine

import (
	"context"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
)

// ImageStore is what the container side of the engine needs of the image
// and layer store; storage.Store implements it. Errors are classed at the
// source: an unknown image is errdefs.ErrNotFound with Docker's
// "No such image: <ref>".
type ImageStore interface {
	// ContainerImage resolves ref (name, ID or ID prefix) to the image a
	// new container is made from: its ID ("sha256:…") and config.
	ContainerImage(ctx context.Context, ref string) (id string, cfg *dockerspec.DockerOCIImage, err error)
	// CreateRootfs makes the container's writable layer on top of imageID
	// and returns the storage container's ID.
	CreateRootfs(ctx context.Context, containerID, imageID string) (rootfsID string, err error)
	// MountRootfs mounts the rootfs and returns its path; mounts nest, so
	// every MountRootfs needs an UnmountRootfs.
	MountRootfs(ctx context.Context, rootfsID string) (path string, err error)
	UnmountRootfs(ctx context.Context, rootfsID string) error
	// RemoveRootfs deletes the writable layer (unmounting it first).
	RemoveRootfs(ctx context.Context, rootfsID string) error
	// PullImage pulls fromImage:tag (the API's two parameters) from its
	// registry, calling progress with Docker's stream messages. Errors
	// before the first message are the caller's to answer as HTTP errors.
	PullImage(ctx context.Context, fromImage, tag string, auth registry.AuthConfig, platform string, progress func(jsonstream.Message)) error
	// Driver names the storage driver (overlay, vfs…) and DriverStatus
	// describes it, for /info.
	Driver() string
	DriverStatus() [][2]string
}
