//go:build !linux

package spec

import (
	"fmt"

	"github.com/containerd/errdefs"
)

// readRootFile needs openat2(2) to stay inside the rootfs.
func readRootFile(root, name string) ([]byte, error) {
	return nil, fmt.Errorf("reading %s inside a rootfs: %w", name, errdefs.ErrNotImplemented)
}
