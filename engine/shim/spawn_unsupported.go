//go:build !linux

package shim

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
)

// Create needs Linux.
func Create(context.Context, StartOptions) (*Client, error) {
	return nil, fmt.Errorf("containers need Linux: %w", errdefs.ErrNotImplemented)
}

// Start needs Linux.
func Start(context.Context, StartOptions) (*Client, error) {
	return nil, fmt.Errorf("containers need Linux: %w", errdefs.ErrNotImplemented)
}

// Delete needs Linux.
func Delete(context.Context, string, string) error {
	return fmt.Errorf("containers need Linux: %w", errdefs.ErrNotImplemented)
}

// CloseWarm has nothing to stop.
func CloseWarm() {}
