package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/spec"
)

// shmDir is where the /dev/shm of a container with --ipc shareable is
// mounted in the engine's mount namespace: beside its bundle, on the
// runtime dir.
func shmDir(c *container.Container) string {
	return filepath.Join(c.Runtime.BundleDir, "shm")
}

// mountShm mounts the tmpfs of a shareable container's /dev/shm (its
// --shm-size, Docker's mode and flags) where the containers that join its
// IPC namespace bind it too, as Docker mounts it on the host.
func mountShm(c *container.Container) (string, error) {
	dir := shmDir(c)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	unix.Unmount(dir, unix.MNT_DETACH) // left by a run the engine did not see end
	size := c.HostConfig.ShmSize
	if size <= 0 {
		size = spec.DefaultShmSize
	}
	data := "mode=1777,size=" + strconv.FormatInt(size, 10)
	if err := unix.Mount("shm", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, data); err != nil {
		return "", fmt.Errorf("mounting /dev/shm of a shareable IPC namespace: %w", err)
	}
	return dir, nil
}

// unmountShm unmounts what mountShm mounted, if it is there: the
// containers that joined keep their own bind of it.
func unmountShm(c *container.Container) {
	if err := unix.Unmount(shmDir(c), unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return
	}
	os.Remove(shmDir(c))
}

// ipcShare sets in for --ipc shareable (a /dev/shm of the engine's) and
// container:<id> (that container's IPC namespace and /dev/shm, which it
// must share, as Docker checks). The release it returns unmounts what it
// mounted.
func (e *Engine) ipcShare(ctx context.Context, c *container.Container, in *spec.Input) (release func(), err error) {
	switch mode := c.HostConfig.IpcMode; {
	case mode.IsShareable():
		if in.ShmPath, err = mountShm(c); err != nil {
			return nil, err
		}
		return func() { unmountShm(c) }, nil
	case mode.IsContainer():
		other, path, err := e.sharedNamespace(ctx, c, "ipc", mode.Container())
		if err != nil {
			return nil, err
		}
		if other.HostConfig == nil || !other.HostConfig.IpcMode.IsShareable() {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("container %s: non-shareable IPC (hint: use IpcMode:shareable for the donor container)", mode.Container()))
		}
		in.IpcNSPath, in.ShmPath = path, shmDir(other)
	}
	return func() {}, nil
}
