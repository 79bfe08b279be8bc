package engine

import (
	"errors"
	"fmt"
	"path"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/archive"
)

// newWorkdir is the working directory that a create must make: the one
// asked for in the request, unless it is the image's own (a Dockerfile's
// WORKDIR made it in the image; a start makes one still missing, as
// libcontainer makes the process's cwd). Docker makes the working
// directory at every create, which costs a mount of the rootfs; hutch
// does so only for a directory the image may well not have, so that
// `docker cp` into it works before the start, and a file there fails the
// create, not the start.
func newWorkdir(cfg *containertypes.Config, img *dockerspec.DockerOCIImageConfig) string {
	wd := cfg.WorkingDir
	if wd == "" || wd == "/" {
		return ""
	}
	if img != nil && img.WorkingDir != "" && path.Clean("/"+img.WorkingDir) == wd {
		return ""
	}
	return wd
}

// makeWorkdir makes dir (absolute, in the container) in the mounted
// rootfs, resolving it inside the rootfs as Docker's MkdirAll in the
// container's root does. A file in the way is Docker's error.
func makeWorkdir(rootfs, dir string) error {
	root, err := archive.Open(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	fd, err := root.MakeDir(dir)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EEXIST) {
		// Docker's message and status (500).
		return errdefs.ErrUnknown.WithMessage(fmt.Sprintf("Cannot mkdir: %s is not a directory", dir))
	}
	return fmt.Errorf("working directory %s: %w", dir, err)
}
