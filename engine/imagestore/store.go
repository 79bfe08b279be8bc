package imagestore

import (
	"context"
	"io"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Store is what the engine needs of the image and layer store;
// storage.Store implements it. Errors are classed at the source: an unknown
// image is errdefs.ErrNotFound with Docker's "No such image: <ref>", an
// unparsable reference errdefs.ErrInvalidArgument with the reference
// library's "invalid reference format…", an image a container's rootfs
// still uses errdefs.ErrConflict.
type Store interface {
	Rootfs
	Images
	Registry
	Archive
}

// Rootfs is the store's side of a container's file system: the
// writable layer on top of its image, and image mounts.
type Rootfs interface {
	// CreateRootfs makes the container's writable layer on top of imageID
	// (volatile: not synced to disk, for containers removed when they end)
	// and returns the storage container's ID.
	CreateRootfs(ctx context.Context, containerID, imageID string, volatile bool) (rootfsID string, err error)

	// MountRootfs mounts the rootfs and returns its path; mounts nest, so
	// every MountRootfs needs an UnmountRootfs.
	MountRootfs(ctx context.Context, rootfsID string) (path string, err error)
	UnmountRootfs(ctx context.Context, rootfsID string) error

	// MountImage mounts image imageID's layers, merged and read-only, and
	// returns the path (--mount type=image); mounts nest, so every
	// MountImage needs an UnmountImage.
	MountImage(ctx context.Context, imageID string) (path string, err error)
	UnmountImage(ctx context.Context, imageID string) error

	// RemoveRootfs deletes the writable layer (unmounting it first).
	RemoveRootfs(ctx context.Context, rootfsID string) error

	// ResetRootfs unmounts and empties a writable layer for another
	// container of its image; errdefs.ErrNotImplemented where the driver
	// cannot. After an error the layer is only fit for RemoveRootfs.
	ResetRootfs(ctx context.Context, rootfsID string) error

	// RootfsDriverData describes a writable layer as Docker's inspect
	// does in GraphDriver.Data (LowerDir, MergedDir, UpperDir, WorkDir).
	RootfsDriverData(ctx context.Context, rootfsID string) (map[string]string, error)

	// RootfsSize is what the container changed in its writable layer, in
	// bytes (Docker's SizeRw).
	RootfsSize(ctx context.Context, rootfsID string) (int64, error)

	// Rootfses lists the IDs of every writable layer.
	Rootfses(ctx context.Context) ([]string, error)

	// RootfsChanges lists what changed in the rootfs against its image,
	// sorted by path (docker diff).
	RootfsChanges(ctx context.Context, rootfsID string) ([]containertypes.FilesystemChange, error)
}

// Images are the images of the store, their names and the driver that
// holds them.
type Images interface {
	// ContainerImage resolves ref (name, ID or ID prefix) to the image a
	// new container is made from: its ID ("sha256:…") and config.
	ContainerImage(ctx context.Context, ref string) (id string, cfg *dockerspec.DockerOCIImage, err error)

	// ListImages returns every image of the store (without DriverData).
	ListImages(ctx context.Context) ([]Image, error)

	// LookupImage finds ref as Docker does: a full ID ("sha256:<hex>" or
	// hex), a name ("busybox" is docker.io/library/busybox:latest), a
	// digest reference, or an unambiguous ID prefix.
	LookupImage(ctx context.Context, ref string) (*Image, error)

	// LookupImagePlatform is LookupImage with, for a multi-platform
	// image, the Config and Layers of platform want's image (nil: the
	// host's); errdefs.ErrNotFound with Docker's "… does not provide the
	// specified platform …" when it has no content for it.
	LookupImagePlatform(ctx context.Context, ref string, want *ocispec.Platform) (*Image, error)

	// DeletePlatforms deletes the content of multi-platform image id's
	// platforms want (its index goes on naming them) and returns the
	// index entries whose content went; errdefs.ErrInvalidArgument for an
	// image of one manifest.
	DeletePlatforms(ctx context.Context, id string, want []ocispec.Platform) ([]ocispec.Descriptor, error)

	// IndexBlob returns blob d that multi-platform image id keeps: its
	// index (d is then the image's ID), or an attestation manifest or
	// statement the index names. A blob it does not keep, and any blob
	// of an image of one manifest, is errdefs.ErrNotFound.
	IndexBlob(ctx context.Context, id string, d digest.Digest) ([]byte, error)

	// TagImage gives image id the fully qualified tagged name
	// ("docker.io/library/busybox:1"), taking it from any image that had it.
	TagImage(ctx context.Context, id, name string) error

	// UntagImage removes ref (fully qualified tag or digest reference) from
	// image id. Removing a reference the image does not have is no error.
	UntagImage(ctx context.Context, id, ref string) error

	// DeleteImage deletes image id with its names, and the layers no other
	// image or rootfs uses; it returns the storage IDs of the deleted
	// layers, top first.
	DeleteImage(ctx context.Context, id string) (layers []string, err error)

	// Driver names the storage driver (overlay, vfs…) and DriverStatus
	// describes it, for /info.
	Driver() string
	DriverStatus() [][2]string
}

// Registry is what the store does with registries.
type Registry interface {
	// PullImage pulls fromImage:tag (the API's two parameters) from its
	// registry, calling progress with Docker's stream messages. Errors
	// before the first message are the caller's to answer as HTTP errors.
	PullImage(ctx context.Context, fromImage, tag string, auth registry.AuthConfig, platform string, progress func(jsonstream.Message)) error

	// PushImage pushes image id to the registry of name (fully qualified
	// and tagged), calling progress with Docker's push stream from the
	// first "Preparing" to the closing digest line. Rejected credentials
	// are classed errdefs.ErrUnauthenticated.
	PushImage(ctx context.Context, id, name string, auth registry.AuthConfig, progress func(jsonstream.Message)) error

	// RegistryLogin checks credentials against auth.ServerAddress's
	// registry. Rejected credentials are errdefs.ErrUnauthenticated.
	RegistryLogin(ctx context.Context, auth registry.AuthConfig) error

	// InspectDistribution asks ref's registry for its manifest's
	// descriptor and platforms (GET /distribution/{name}/json).
	InspectDistribution(ctx context.Context, ref string, auth registry.AuthConfig) (registry.DistributionInspect, error)

	// SearchRegistry lists the repositories of term's registry whose names
	// contain it, at most limit (0: the default) (GET /images/search).
	SearchRegistry(ctx context.Context, term string, limit int, auth registry.AuthConfig) ([]registry.SearchResult, error)
}

// Archive makes images from tars and containers and writes them out.
type Archive interface {
	// ImportImage stores a rootfs tar (plain or compressed) as a one-layer
	// image whose config is cfg with its RootFS filled in, named name (fully
	// qualified, or "" for none). A failure leaves no image and no layer.
	ImportImage(ctx context.Context, rootfs io.Reader, cfg ImportConfig, name string) (id string, err error)

	// LoadImages stores the images of a `docker save` archive (plain or
	// compressed), in archive order. An image that fails leaves nothing
	// behind; images loaded before it stay, as in Docker.
	LoadImages(ctx context.Context, archive io.Reader, opts LoadOptions) ([]LoadedImage, error)

	// SaveImages writes images in Docker's archive format to w.
	SaveImages(ctx context.Context, images []SaveImage, w io.Writer) error

	// CommitImage stores the rootfs's changes as a new layer on top of its
	// image and the image described by img; it returns the new image's ID.
	// A failure leaves no image and no layer.
	CommitImage(ctx context.Context, rootfsID string, img CommitImage) (id string, err error)
}
