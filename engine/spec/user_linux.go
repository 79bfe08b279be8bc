package spec

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// readRootFile reads name inside root with openat2(RESOLVE_IN_ROOT): every
// symlink and ".." on the way resolves as if root were "/", so a link in the
// image to /etc/shadow names root's own /etc/shadow. A missing file is
// (nil, nil). Kernels before 5.6 have no openat2; rootless overlay needs
// 5.11 anyway.
func readRootFile(root, name string) ([]byte, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening rootfs: %w", &os.PathError{Op: "open", Path: root, Err: err})
	}
	defer unix.Close(dir)
	how := unix.OpenHow{
		// O_NONBLOCK: a FIFO planted by the image must not block the engine.
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for range 16 {
		// EAGAIN: a rename raced with the lookup (RESOLVE_IN_ROOT is strict
		// about that); the rootfs is not normally in use, so retry.
		fd, err = unix.Openat2(dir, name, &how)
		if err != unix.EAGAIN && err != unix.EINTR {
			break
		}
	}
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, nil
	case errors.Is(err, unix.ELOOP):
		// A symlink loop is a broken image, not an engine failure.
		return nil, fmt.Errorf("%s in the image: %w: %w", name, &os.PathError{Op: "openat2", Path: name, Err: err}, errdefs.ErrInvalidArgument)
	case err != nil:
		return nil, fileError(name, &os.PathError{Op: "openat2", Path: name, Err: err})
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
