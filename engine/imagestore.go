package engine

import (
	"context"
	"io"
	"time"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ImageStore is what the engine needs of the image and layer store;
// storage.Store implements it. Errors are classed at the source: an unknown
// image is errdefs.ErrNotFound with Docker's "No such image: <ref>", an
// unparsable reference errdefs.ErrInvalidArgument with the reference
// library's "invalid reference format…", an image a container's rootfs
// still uses errdefs.ErrConflict.
type ImageStore interface {
	// ContainerImage resolves ref (name, ID or ID prefix) to the image a
	// new container is made from: its ID ("sha256:…") and config.
	ContainerImage(ctx context.Context, ref string) (id string, cfg *dockerspec.DockerOCIImage, err error)
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
	// PullImage pulls fromImage:tag (the API's two parameters) from its
	// registry, calling progress with Docker's stream messages. Errors
	// before the first message are the caller's to answer as HTTP errors.
	PullImage(ctx context.Context, fromImage, tag string, auth registry.AuthConfig, platform string, progress func(jsonstream.Message)) error
	// Driver names the storage driver (overlay, vfs…) and DriverStatus
	// describes it, for /info.
	Driver() string
	DriverStatus() [][2]string

	// ListImages returns every image of the store (without DriverData).
	ListImages(ctx context.Context) ([]Image, error)
	// LookupImage finds ref as Docker does: a full ID ("sha256:<hex>" or
	// hex), a name ("busybox" is docker.io/library/busybox:latest), a
	// digest reference, or an unambiguous ID prefix.
	LookupImage(ctx context.Context, ref string) (*Image, error)
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
	// RegistryLogin checks credentials against auth.ServerAddress's
	// registry. Rejected credentials are errdefs.ErrUnauthenticated.
	RegistryLogin(ctx context.Context, auth registry.AuthConfig) error
	// InspectDistribution asks ref's registry for its manifest's
	// descriptor and platforms (GET /distribution/{name}/json).
	InspectDistribution(ctx context.Context, ref string, auth registry.AuthConfig) (registry.DistributionInspect, error)
	// SearchRegistry lists the repositories of term's registry whose names
	// contain it, at most limit (0: the default) (GET /images/search).
	SearchRegistry(ctx context.Context, term string, limit int, auth registry.AuthConfig) ([]registry.SearchResult, error)

	// RootfsChanges lists what changed in the rootfs against its image,
	// sorted by path (docker diff).
	RootfsChanges(ctx context.Context, rootfsID string) ([]containertypes.FilesystemChange, error)
	// CommitImage stores the rootfs's changes as a new layer on top of its
	// image and the image described by img; it returns the new image's ID.
	// A failure leaves no image and no layer.
	CommitImage(ctx context.Context, rootfsID string, img CommitImage) (id string, err error)
	// PushImage pushes image id to the registry of name (fully qualified
	// and tagged), calling progress with Docker's push stream from the
	// first "Preparing" to the closing digest line. Rejected credentials
	// are classed errdefs.ErrUnauthenticated.
	PushImage(ctx context.Context, id, name string, auth registry.AuthConfig, progress func(jsonstream.Message)) error
}

// Image is an image of the store as the image service sees it.
type Image struct {
	// ID is "sha256:" + the hex digest of the config.
	ID string
	// Refs are its references, fully qualified: tags
	// ("docker.io/library/busybox:latest") first, then digest references
	// ("docker.io/library/busybox@sha256:…").
	Refs []string
	// Config is the image config; nil if it cannot be read.
	Config *dockerspec.DockerOCIImage
	// Comment is the config's top-level "comment" (docker import -m).
	Comment string
	// Container and ContainerConfig are the config's legacy top-level
	// "container" and "container_config": the container a commit or a
	// build step made the image from, and that container's config (nil
	// when the config has none). Docker reports them before API 1.45.
	Container       string
	ContainerConfig *containertypes.Config
	// Parent is the ID of the image a commit made this one from, or "".
	Parent string
	// Layers are the image's layers, bottom first.
	Layers []ImageLayer
	// Created is the config's creation time, else when it was stored.
	Created time.Time
	// LastTagTime is when TagImage last named it (zero if never).
	LastTagTime time.Time
	// DriverData describes the top layer to the graph driver (overlay's
	// LowerDir, UpperDir…); LookupImage fills it, ListImages does not.
	DriverData map[string]string
}

// ImageLayer is one layer of an image.
type ImageLayer struct {
	ID     string        // the store's layer ID
	DiffID digest.Digest // digest of the uncompressed content
	Size   int64         // uncompressed size in bytes
}

// Size is the image's size as Docker reports it: the uncompressed size of
// its layers.
func (img *Image) Size() int64 {
	var n int64
	for _, l := range img.Layers {
		n += l.Size
	}
	return n
}

// ImportConfig is the config of an imported image.
type ImportConfig struct {
	// Image is the config; the store fills in RootFS.
	Image dockerspec.DockerOCIImage
	// Comment is written as the config's top-level "comment", as Docker does.
	Comment string
}

// LoadOptions are the choices of a load.
type LoadOptions struct {
	// Match, when set, selects the archive's images to load by their
	// platform; the others are left out.
	Match func(ocispec.Platform) bool
	// Progress, when set, receives Docker's "Loading layer" progress of
	// each layer stored (docker load without --quiet).
	Progress func(jsonstream.Message)
}

// LoadedImage is one image of a loaded archive.
type LoadedImage struct {
	ID string
	// Names are the fully qualified tags the archive gave it, in order.
	Names []string
	// Replaced maps each name that belonged to another image before the
	// load to that image's ID.
	Replaced map[string]string
}

// CommitImage describes the image a commit makes.
type CommitImage struct {
	// Image is the new config: the source image's (its History included)
	// with the committed Config, Created and Author. The store sets
	// RootFS, and appends History with EmptyLayer set when nothing changed.
	Image   dockerspec.DockerOCIImage
	History ocispec.History
	// Comment is written as the config's top-level "comment", as Docker
	// does.
	Comment string
	// Container and ContainerConfig are written as the config's top-level
	// "container" and "container_config", as Docker's commit and classic
	// builder do: the source container's ID and its config.
	Container       string
	ContainerConfig *containertypes.Config
	// Name is the fully qualified tag to give the image ("" for none).
	Name string
	// Parent is the source image's ID, Docker's ParentId.
	Parent string
	// Exclude lists paths ("/etc/hosts") left out of the layer: the mount
	// points the runtime created, which are not the container's changes.
	Exclude map[string]bool
}

// SaveImage is one image to save and the fully qualified tags to record
// for it in the archive (none: the image is saved by ID).
type SaveImage struct {
	ID    string
	Names []string
}
