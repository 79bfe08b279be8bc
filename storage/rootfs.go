package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	cstorage "go.podman.io/storage"

	"github.com/hutch-engine/hutch/engine/imagestore"
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
	img, err := s.contentImage(imageID)
	if err != nil {
		return "", err
	}
	c, err := s.cs.CreateContainer(id, nil, img.ID, "", "", &cstorage.ContainerOptions{Volatile: volatile})
	if err != nil {
		return "", fmt.Errorf("storage: creating the rootfs of %s: %w", id, classify(err))
	}
	return c.ID, nil
}

// RootfsDriverData describes rootfs id's layer as Docker's inspect does:
// for the overlay drivers the directories of the layer (UpperDir,
// WorkDir, MergedDir) and of the image's layers below it (LowerDir, top
// first); for vfs its directory (Dir).
func (s *Store) RootfsDriverData(ctx context.Context, id string) (map[string]string, error) {
	if s.driver.name == DriverVFS {
		c, err := s.cs.Container(id)
		if err != nil {
			return nil, fmt.Errorf("storage: rootfs %s: %w", id, classify(err))
		}
		return map[string]string{"Dir": filepath.Join(s.opts.GraphRoot, s.cs.GraphDriverName(), "dir", c.LayerID)}, nil
	}
	unlock := s.mounts.locks.lock(id)
	l, err := s.layout(id, s.mountState(id))
	unlock()
	if err != nil {
		return nil, err
	}
	return map[string]string{
		"LowerDir":  strings.Join(l.lowers, ":"),
		"MergedDir": l.merged(),
		"UpperDir":  filepath.Join(l.dir, "diff"),
		"WorkDir":   filepath.Join(l.dir, "work"),
	}, nil
}

// RootfsSize is the size of the files in writable layer id, which is what
// its container changed: containers/storage's size of the layer's diff
// against the image (the upper directory's files with the overlay drivers).
func (s *Store) RootfsSize(ctx context.Context, id string) (int64, error) {
	c, err := s.cs.Container(id)
	if err != nil {
		return 0, fmt.Errorf("storage: rootfs %s: %w", id, classify(err))
	}
	n, err := s.cs.DiffSize("", c.LayerID)
	if err != nil {
		return 0, fmt.Errorf("storage: size of rootfs %s: %w", id, classify(err))
	}
	return n, nil
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

var _ imagestore.Store = (*Store)(nil)

// PullImage pulls fromImage (with tag, as the API's two parameters) with
// the store's registry settings, reporting Docker's progress stream.
func (s *Store) PullImage(ctx context.Context, fromImage, tag string, auth registry.AuthConfig, platform string, progress func(jsonstream.Message)) error {
	ref, err := NormalizeReference(fromImage, tag)
	if err != nil {
		return err
	}
	opts := s.registryOptions(auth)
	opts.Platform = platform
	_, err = s.Pull(ctx, ref, opts, progress)
	return err
}

// RegistryLogin checks credentials with the store's registry settings, for
// POST /auth.
func (s *Store) RegistryLogin(ctx context.Context, auth registry.AuthConfig) error {
	return s.Login(ctx, auth, s.registryOptions(registry.AuthConfig{}))
}

// registryOptions are the store's registry settings (daemon.json's
// insecure-registries and registry-mirrors) with auth.
func (s *Store) registryOptions(auth registry.AuthConfig) PullOptions {
	return PullOptions{Auth: auth, InsecureRegistries: s.opts.InsecureRegistries, Mirrors: s.opts.Mirrors}
}
