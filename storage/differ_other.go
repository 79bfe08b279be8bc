//go:build !linux

package storage

import (
	"context"

	"github.com/containerd/errdefs"
	"go.podman.io/image/v5/types"
	graphdriver "go.podman.io/storage/drivers"
)

// canStage: streaming extraction is Linux-only (openat2).
func (s *Store) canStage() bool { return false }

func (s *Store) stageLayer(context.Context, types.ImageSource, *layerFetch, *pullProgress) (*graphdriver.DriverWithDifferOutput, error) {
	return nil, errdefs.ErrNotImplemented
}

func pruneStaging(string) error { return nil }
