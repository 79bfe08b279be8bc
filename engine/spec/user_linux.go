package spec

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/internal/inroot"
	"golang.org/x/sys/unix"
)

// readRootFile reads name inside root with every symlink and ".." on the
// way resolved as if root were "/" (package inroot), so a link in the
// image to /etc/shadow names root's own /etc/shadow. A missing file is
// (nil, nil).
func readRootFile(root, name string) ([]byte, error) {
	r, err := inroot.Open(root)
	if err != nil {
		return nil, fmt.Errorf("opening rootfs: %w", err)
	}
	defer r.Close()
	// O_NONBLOCK: a FIFO planted by the image must not block the engine.
	fd, err := r.OpenFd(name, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK, 0, inroot.InRoot)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, nil
	case errors.Is(err, unix.ELOOP):
		// A symlink loop is a broken image, not an engine failure.
		return nil, fmt.Errorf("%s in the image: %w: %w", name, err, errdefs.ErrInvalidArgument)
	case err != nil:
		return nil, fileError(name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fileError(name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fileError(name, errNotRegular)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxUserFile+1))
	if err != nil {
		return nil, fileError(name, err)
	}
	if len(b) > maxUserFile {
		return nil, fmt.Errorf("%s in the image is larger than %d bytes: %w", name, maxUserFile, errdefs.ErrInvalidArgument)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}
