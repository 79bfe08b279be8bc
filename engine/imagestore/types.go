package imagestore

import (
	"time"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image is an image of the store as the image service sees it.
type Image struct {
	// ID is "sha256:" + the hex digest of the image's manifest (Descriptor):
	// the OCI manifest of its config and uncompressed layers, as Docker's
	// containerd image store names an image by its manifest's digest.
	ID string
	// Descriptor describes that manifest (nil for an image whose manifest
	// could not be made; its ID is then its config's digest).
	Descriptor *ocispec.Descriptor
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
	Layers []Layer
	// Created is the config's creation time, else when it was stored.
	Created time.Time
	// LastTagTime is when TagImage last named it (zero if never).
	LastTagTime time.Time
	// Platforms are the platforms of a multi-platform image (one whose ID
	// names an image index), available or not; nil for an image of one
	// manifest. Config and Layers are then those of one platform's image:
	// the host's, else the first available.
	Platforms []PlatformImage
	// Instance, for a multi-platform image, is the platform whose Config
	// and Layers these are (nil when none is available).
	Instance *PlatformImage
	// DriverData describes the top layer to the graph driver (overlay's
	// LowerDir, UpperDir…); LookupImage fills it, ListImages does not.
	DriverData map[string]string
}

// PlatformImage is one platform of a multi-platform image.
type PlatformImage struct {
	// Descriptor is the index's entry for it, Platform set.
	Descriptor ocispec.Descriptor
	// Available tells whether its content is in the store; ID, Size and
	// Config are known only then. ID is its own image's ID.
	Available bool
	ID        string
	Size      int64
	Config    *dockerspec.DockerOCIImage
}

// Layer is one layer of an image.
type Layer struct {
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
	// Unpack, for a multi-platform image, is why platforms whose content
	// the archive holds intact could not be stored (a layer that does
	// not unpack): the image is loaded without them, as Docker loads an
	// image it fails to unpack.
	Unpack error
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
	// Platforms, for a multi-platform image, are the platforms to save
	// (none: every platform whose content the store has).
	Platforms []ocispec.Platform
}
