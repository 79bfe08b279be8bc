package engine

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"
	"golang.org/x/sys/unix"
)

// bindSubpaths prepares the volume subpaths of c's mounts (--mount
// type=volume,volume-subpath=…) as Docker's safepath does: each subpath
// is opened inside its volume with symlinks and ".." kept within it
// (openat2 RESOLVE_IN_ROOT), and the open file is bound at a staging
// point beside the bundle, which the runtime binds into the container. A
// symlink swapped in after the lookup cannot redirect the bind. The
// release unmounts the staging points; the container's own mounts stay.
// It is called once the runtime has made them.
func (e *Engine) bindSubpaths(c *container.Container) (map[string]string, func(), error) {
	var staged []string
	release := func() {
		for _, p := range staged {
			unix.Unmount(p, unix.MNT_DETACH)
			os.Remove(p)
		}
	}
	var out map[string]string
	for i, m := range c.HostConfig.Mounts {
		if m.Type != mounttypes.TypeVolume || m.VolumeOptions == nil || m.VolumeOptions.Subpath == "" {
			continue
		}
		dst := path.Clean(m.Target)
		src := ""
		for _, mp := range c.Mounts {
			if mp.Destination == dst && mp.Type == mounttypes.TypeVolume {
				src = mp.Source
			}
		}
		if src == "" {
			release()
			return nil, nil, fmt.Errorf("volume at %s: not in the container's mounts", dst)
		}
		p := filepath.Join(c.Runtime.BundleDir, "subpath-"+strconv.Itoa(i))
		if err := stageSubpath(src, m.VolumeOptions.Subpath, p); err != nil {
			release()
			return nil, nil, err
		}
		staged = append(staged, p)
		if out == nil {
			out = map[string]string{}
		}
		out[dst] = p
	}
	return out, release, nil
}

// stageSubpath binds sub, resolved inside the volume directory root, at
// staging.
func stageSubpath(root, sub, staging string) error {
	r, err := openFSRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	fd, err := r.open(sub, unix.O_PATH)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("cannot access path %s: %v", filepath.Join(root, sub), err))
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(staging), 0o700); err != nil {
		return err
	}
	unix.Unmount(staging, unix.MNT_DETACH) // left by a start the engine did not see end
	os.Remove(staging)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		err = os.Mkdir(staging, 0o700)
	} else {
		err = os.WriteFile(staging, nil, 0o600)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), staging, "", unix.MS_BIND, ""); err != nil {
		os.Remove(staging)
		return fmt.Errorf("binding volume subpath %s: %w", sub, err)
	}
	return nil
}

// openMountRoot opens the directory a bind or volume mount of c shows:
// its source, or the subpath of the volume, found inside the volume as at
// start.
func openMountRoot(c *container.Container, mp *containertypes.MountPoint) (*fsRoot, error) {
	r, err := openFSRoot(mp.Source)
	sub := subpathOf(c.HostConfig, mp.Destination)
	if err != nil || sub == "" {
		return r, err
	}
	defer r.Close()
	fd, err := r.open(sub, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, fmt.Errorf("volume at %s, subpath %s: %w", mp.Destination, sub, err)
	}
	return &fsRoot{fd: fd, path: filepath.Join(mp.Source, sub)}, nil
}
