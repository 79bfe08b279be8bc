package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	cstorage "go.podman.io/storage"
)

// MountImage mounts image id's layers, merged and read-only, and returns
// the path (--mount type=image). Mounts of one image nest: each needs an
// UnmountImage. containers/storage mounts the image's top layer with its
// driver's read-only options (overlay without an upper directory, the
// layer's own directory for vfs) and counts the mounts in its run root,
// where a daemon that starts anew finds them (resetStaleMounts).
func (s *Store) MountImage(ctx context.Context, id string) (string, error) {
	img, err := s.contentImage(id)
	if err != nil {
		return "", err
	}
	if img.TopLayer == "" {
		// An image without layers (FROM scratch and nothing added) shows
		// an empty directory, which the store has no layer to mount for.
		return s.emptyImageDir()
	}
	p, err := s.cs.MountImage(img.ID, nil, "")
	if err != nil {
		return "", fmt.Errorf("storage: mounting image %s: %w", id, imageError(id, err))
	}
	return p, nil
}

// UnmountImage releases one MountImage of image id.
func (s *Store) UnmountImage(ctx context.Context, id string) error {
	img, err := s.contentImage(id)
	if err != nil {
		return err
	}
	if img.TopLayer == "" {
		return nil
	}
	if _, err := s.cs.UnmountImage(img.ID, false); err != nil && !ignorableUnmount(err) {
		return fmt.Errorf("storage: unmounting image %s: %w", id, err)
	}
	return nil
}

// emptyImageDir is the directory an image without layers shows: empty,
// and read-only to its owner too, so that a stray write fails here as it
// does on the mounts of other images.
func (s *Store) emptyImageDir() (string, error) {
	p := filepath.Join(s.opts.RunRoot, "hutch-empty-image")
	if err := os.Mkdir(p, 0o555); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("storage: %w", err)
	}
	return p, nil
}

// imageError classes a containers/storage error about image id, with
// Docker's words for an unknown one.
func imageError(id string, err error) error {
	if errors.Is(err, cstorage.ErrImageUnknown) || errors.Is(err, cstorage.ErrNotAnImage) {
		return noSuchImage(id)
	}
	return classify(err)
}
