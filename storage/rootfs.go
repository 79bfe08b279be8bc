package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	cstorage "go.podman.io/storage"
)

// The container side of the engine: each container has a containers/storage
// container (a writable layer on its image's top layer) named by the
// container's ID.

// ContainerImage resolves ref to the image a new container is made from.
func (s *Store) ContainerImage(ctx context.Context, ref string) (string, *dockerspec.DockerOCIImage, error) {
	img, err := s.Image(ref)
	if err != nil {
		return "", nil, err
	}
	cfg, err := s.ImageConfig(img.ID)
	if err != nil {
		return "", nil, err
	}
	return img.ID, cfg, nil
}

// CreateRootfs makes the writable layer of container id on imageID. A
// volatile one (docker run --rm) skips containers/storage's syncs and is
// mounted with overlay's volatile option, as Podman does for --rm.
func (s *Store) CreateRootfs(ctx context.Context, id, imageID string, volatile bool) (string, error) {
	c, err := s.cs.CreateContainer(id, nil, strings.TrimPrefix(imageID, "sha256:"), "", "", &cstorage.ContainerOptions{Volatile: volatile})
	if err != nil {
		return "", fmt.Errorf("storage: creating the rootfs of %s: %w", id, classify(err))
	}
	return c.ID, nil
}

// MountRootfs mounts the rootfs and returns its path.
func (s *Store) MountRootfs(ctx context.Context, id string) (string, error) {
	p, err := s.cs.Mount(id, "")
	if err != nil {
		return "", fmt.Errorf("storage: mounting the rootfs of %s: %w", id, classify(err))
	}
	return p, nil
}

// UnmountRootfs releases one mount of the rootfs.
func (s *Store) UnmountRootfs(ctx context.Context, id string) error {
	if _, err := s.cs.Unmount(id, false); err != nil && !errors.Is(err, cstorage.ErrContainerUnknown) && !errors.Is(err, cstorage.ErrLayerUnknown) && !errors.Is(err, cstorage.ErrLayerNotMounted) {
		return fmt.Errorf("storage: unmounting the rootfs of %s: %w", id, err)
	}
	return nil
}

// RemoveRootfs unmounts and deletes the writable layer.
func (s *Store) RemoveRootfs(ctx context.Context, id string) error {
	if _, err := s.cs.Unmount(id, true); err != nil && !errors.Is(err, cstorage.ErrContainerUnknown) && !errors.Is(err, cstorage.ErrLayerUnknown) && !errors.Is(err, cstorage.ErrLayerNotMounted) {
		return fmt.Errorf("storage: unmounting the rootfs of %s: %w", id, err)
	}
	if err := s.cs.DeleteContainer(id); err != nil {
		if errors.Is(err, cstorage.ErrContainerUnknown) || errors.Is(err, cstorage.ErrNotAContainer) {
			return fmt.Errorf("storage: rootfs %s: %w", id, errdefs.ErrNotFound)
		}
		return fmt.Errorf("storage: deleting the rootfs of %s: %w", id, err)
	}
	return nil
}

// RootfsDriverData describes rootfs id's layer as Docker's inspect does:
// for the overlay drivers the directories of the layer (UpperDir,
// WorkDir, MergedDir) and of the image's layers below it (LowerDir, top
// first); for vfs its directory (Dir).
func (s *Store) RootfsDriverData(ctx context.Context, id string) (map[string]string, error) {
	c, err := s.cs.Container(id)
	if err != nil {
		return nil, fmt.Errorf("storage: rootfs %s: %w", id, classify(err))
	}
	home := filepath.Join(s.opts.GraphRoot, s.cs.GraphDriverName())
	if s.driver.name == DriverVFS {
		return map[string]string{"Dir": filepath.Join(home, "dir", c.LayerID)}, nil
	}
	var lower []string
	l, err := s.cs.Layer(c.LayerID)
	for err == nil && l.Parent != "" {
		lower = append(lower, filepath.Join(home, l.Parent, "diff"))
		l, err = s.cs.Layer(l.Parent)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: layers of rootfs %s: %w", id, classify(err))
	}
	dir := filepath.Join(home, c.LayerID)
	return map[string]string{
		"LowerDir":  strings.Join(lower, ":"),
		"MergedDir": filepath.Join(dir, "merged"),
		"UpperDir":  filepath.Join(dir, "diff"),
		"WorkDir":   filepath.Join(dir, "work"),
	}, nil
}

// Rootfses lists the writable layers: containers/storage's containers.
func (s *Store) Rootfses(ctx context.Context) ([]string, error) {
	cs, err := s.cs.Containers()
	if err != nil {
		return nil, fmt.Errorf("storage: listing the rootfs layers: %w", err)
	}
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// classify maps containers/storage errors onto errdefs classes.
func classify(err error) error {
	switch {
	case errors.Is(err, cstorage.ErrImageUnknown), errors.Is(err, cstorage.ErrContainerUnknown), errors.Is(err, cstorage.ErrLayerUnknown):
		return errors.Join(err, errdefs.ErrNotFound)
	case errors.Is(err, cstorage.ErrDuplicateID), errors.Is(err, cstorage.ErrDuplicateName):
		return errors.Join(err, errdefs.ErrConflict)
	}
	return err
}

var _ engine.ImageStore = (*Store)(nil)

// PullImage pulls fromImage (with tag, as the API's two parameters) with
// the store's registry settings, reporting Docker's progress stream.
func (s *Store) PullImage(ctx context.Context, fromImage, tag string, auth registry.AuthConfig, platform string, progress func(jsonstream.Message)) error {
	ref, err := NormalizeReference(fromImage, tag)
	if err != nil {
		return err
	}
	_, err = s.Pull(ctx, ref, PullOptions{
		Auth:               auth,
		InsecureRegistries: s.opts.InsecureRegistries,
		Mirrors:            s.opts.Mirrors,
		Platform:           platform,
	}, progress)
	return err
}

// RegistryLogin checks credentials with the store's registry settings, for
// POST /auth.
func (s *Store) RegistryLogin(ctx context.Context, auth registry.AuthConfig) error {
	return s.Login(ctx, auth, PullOptions{
		InsecureRegistries: s.opts.InsecureRegistries,
		Mirrors:            s.opts.Mirrors,
	})
}
