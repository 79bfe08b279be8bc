//go:build !linux

package storage

import (
	"context"
	"io"

	"github.com/containerd/errdefs"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"
	graphdriver "go.podman.io/storage/drivers"
)

// canStage: streaming extraction is Linux-only (openat2).
func (s *Store) canStage() bool { return false }

func (s *Store) stageLayer(context.Context, types.ImageSource, *layerFetch, *pullProgress) (*graphdriver.DriverWithDifferOutput, error) {
	return nil, errdefs.ErrNotImplemented
}

func pruneStaging(string) error { return nil }

// putStaged: PutLayer's own extraction is all there is off Linux.
func (s *Store) putStaged(string, string, *cstorage.LayerOptions, io.Reader) (*cstorage.Layer, int64, bool, error) {
	return nil, 0, false, nil
}
