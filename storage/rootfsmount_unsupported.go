//go:build !linux

package storage

import (
	"context"
	"fmt"
)

// MountRootfs mounts the rootfs through containers/storage and returns its
// path.
func (s *Store) MountRootfs(ctx context.Context, id string) (string, error) {
	p, err := s.cs.Mount(id, "")
	if err != nil {
		return "", fmt.Errorf("storage: mounting the rootfs of %s: %w", id, classify(err))
	}
	return p, nil
}

// UnmountRootfs releases one mount of the rootfs.
func (s *Store) UnmountRootfs(ctx context.Context, id string) error {
	if _, err := s.cs.Unmount(id, false); err != nil && !ignorableUnmount(err) {
		return fmt.Errorf("storage: unmounting the rootfs of %s: %w", id, err)
	}
	return nil
}

// RemoveRootfs unmounts and deletes the writable layer.
func (s *Store) RemoveRootfs(ctx context.Context, id string) error {
	if _, err := s.cs.Unmount(id, true); err != nil && !ignorableUnmount(err) {
		return fmt.Errorf("storage: unmounting the rootfs of %s: %w", id, err)
	}
	return s.deleteRootfs(id)
}
