//go:build !linux

package storage

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
)

func prepareDriver(ctx context.Context, name string, opts Options) (driverChoice, error) {
	if name == DriverVFS {
		return driverChoice{name: DriverVFS}, nil
	}
	return driverChoice{}, fmt.Errorf("%s needs Linux: %w", name, errdefs.ErrNotImplemented)
}

func unmountUnder(roots ...string) {}
