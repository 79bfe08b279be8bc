//go:build !linux

package storage

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
)

// ResetRootfs needs Linux's overlay layers.
func (s *Store) ResetRootfs(ctx context.Context, id string) error {
	return fmt.Errorf("storage: layers cannot be reset here: %w", errdefs.ErrNotImplemented)
}
