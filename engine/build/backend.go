package build

import (
	"context"
	"io"

	containertypes "github.com/moby/moby/api/types/container"
)

// Backend is the engine as the builder uses it. Containers it creates are
// never seen by the user unless a step fails and is kept.
type Backend interface {
	// Image finds a local image by reference, pulling it when pull is set
	// or it is not there (progress goes to out), and returns its ID and
	// config. Scratch names the empty image.
	Image(ctx context.Context, ref string, pull bool, out Output) (Image, error)
	// Create makes a container of cfg.Image, not started.
	Create(ctx context.Context, cfg *containertypes.Config, hc *containertypes.HostConfig) (string, error)
	// Run starts a container created by Create with its output going to
	// w, waits for its end, and returns its exit code.
	Run(ctx context.Context, id string, w io.Writer) (int, error)
	// Stat tells what is at path in the container, symlinks followed.
	Stat(ctx context.Context, id, path string) (exists, isDir bool, err error)
	// Owner resolves a --chown value ("user", "user:group", numbers) in
	// the container's /etc/passwd and /etc/group.
	Owner(ctx context.Context, id, chown string) (uid, gid int, err error)
	// Extract unpacks a tar stream at / of the container.
	Extract(ctx context.Context, id string, tar io.Reader) error
	// Archive is a tar of path in the container, its top entry named
	// after path's last element, as GET /containers/{id}/archive gives.
	Archive(ctx context.Context, id, path string) (io.ReadCloser, error)
	// Commit stores the container's changes as a new image whose config
	// is exactly cfg, and whose newest history entry says createdBy; its
	// parent is the container's image (so that Cached finds it).
	Commit(ctx context.Context, id string, cfg *containertypes.Config, createdBy, author string) (string, error)
	// Remove deletes a container.
	Remove(ctx context.Context, id string) error
	// Cached finds the newest image committed on parent with createdBy
	// as its newest history entry and exactly cfg as its config: the
	// build cache ("" when there is none).
	Cached(ctx context.Context, parent, createdBy string, cfg *containertypes.Config) (string, error)
	// Tag names an image.
	Tag(ctx context.Context, id, ref string) error
}

// Scratch is the name of the empty base image (FROM scratch) to
// Backend.Image.
const Scratch = "scratch"

// Image is a base image: its ID and its config as a container's.
type Image struct {
	ID     string
	Config containertypes.Config
}
