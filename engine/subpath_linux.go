package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/archive"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/internal/inroot"
)

// stagedPrefix names the staging points beside a container's bundle.
const stagedPrefix = "staged-"

// stagedMounts are the mounts of a start that the runtime binds from a
// staging point: volume subpaths and images, by destination.
type stagedMounts struct {
	subpaths map[string]string
	images   map[string]string
	points   []string
}

// release unmounts the staging points; the container's own mounts stay.
func (s *stagedMounts) release() {
	for _, p := range s.points {
		unix.Unmount(p, unix.MNT_DETACH)
		os.Remove(p)
	}
	s.points = nil
}

// stageMounts prepares the mounts of c that are not a directory of their
// own: the volume subpaths (--mount type=volume,volume-subpath=…) and the
// images (--mount type=image, with image-subpath=…). Each is opened inside
// its volume or image as Docker's safepath does (openSubpath), and the
// open file is bound at a staging point beside the bundle, which the
// runtime binds into the container: a symlink swapped in after the lookup
// cannot redirect the bind. An image is mounted only for as long as its
// staging bind takes: that bind, then the container's own, hold it, so
// nothing of it stays mounted on the engine's side once the runtime has
// made the container's mounts (release), and nothing is left to unmount
// when the container ends or the engine dies.
func (e *Engine) stageMounts(ctx context.Context, c *container.Container) (*stagedMounts, error) {
	s := &stagedMounts{}
	for i, m := range c.HostConfig.Mounts {
		var err error
		dst := path.Clean(m.Target)
		p := filepath.Join(c.Runtime.BundleDir, stagedPrefix+strconv.Itoa(i))
		switch {
		case m.Type == mounttypes.TypeVolume && m.VolumeOptions != nil && m.VolumeOptions.Subpath != "":
			err = stageVolumeSubpath(c, dst, m.VolumeOptions.Subpath, p)
			s.subpaths = setKey(s.subpaths, dst, p)
		case m.Type == mounttypes.TypeImage:
			err = e.stageImage(ctx, c, dst, p)
			s.images = setKey(s.images, dst, p)
		default:
			continue
		}
		if err != nil {
			s.release()
			return nil, err
		}
		s.points = append(s.points, p)
	}
	return s, nil
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func stageVolumeSubpath(c *container.Container, dst, sub, staging string) error {
	for _, mp := range c.Mounts {
		if mp.Destination == dst && mp.Type == mounttypes.TypeVolume {
			return stageSubpath(mp.Source, sub, staging)
		}
	}
	return fmt.Errorf("volume at %s: not in the container's mounts", dst)
}

// stageImage mounts the image of c's image mount at dst and binds it, or
// its subpath, at staging; the store's mount is released at once.
func (e *Engine) stageImage(ctx context.Context, c *container.Container, dst, staging string) error {
	mp := imageMountAt(c, dst)
	if mp == nil {
		return fmt.Errorf("image mount at %s: not in the container's mounts", dst)
	}
	root, err := e.images.MountImage(ctx, mp.Source)
	if err != nil {
		return err
	}
	defer func() {
		if err := e.images.UnmountImage(context.WithoutCancel(ctx), mp.Source); err != nil {
			e.log.Warn("unmounting a staged image", "container", c.ID, "image", mp.Source, "err", err)
		}
	}()
	return stageSubpath(root, imageSubpathOf(c.HostConfig, dst), staging)
}

// stageSubpath binds sub ("" for all of it), resolved inside the
// directory root, at staging.
func stageSubpath(root, sub, staging string) error {
	r, err := archive.Open(root)
	if err != nil {
		return err
	}
	defer r.Close()
	fd, err := openSubpath(r, sub, unix.O_PATH)
	if err != nil {
		return err
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
		return fmt.Errorf("binding %s of %s: %w", sub, root, err)
	}
	return nil
}

// openSubpath opens sub inside root as Docker's safepath joins a volume's
// (or an image's) path and a subpath: relative symlinks are followed while
// they stay inside root; a ".." or a symlink that leads out of it
// (absolute ones always do, the host's root not being the volume's) is
// refused with Docker's ErrEscapesBase words, a path that is not there
// with its ErrNotAccessible words. Every step is checked as it is taken
// (inroot's Beneath scope), so a concurrent rename cannot lead out.
func openSubpath(r *archive.Root, sub string, flags int) (int, error) {
	fd, err := r.OpenFd(sub, flags, 0, inroot.Beneath)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, inroot.ErrEscape):
		return -1, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("path concatenation escapes the base directory, base: %s, subpath: %s", r.Path(), sub))
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return -1, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("cannot access path %s: %v", filepath.Join(r.Path(), sub), errors.Unwrap(err)))
	}
	return -1, &os.PathError{Op: "open", Path: filepath.Join(r.Path(), sub), Err: errors.Unwrap(err)}
}

// unstageAll unmounts the staging points left in bundle by a start that
// did not reach its release (the engine died): removing the bundle must
// not descend into a volume or an image.
func unstageAll(bundle string) {
	unstage(filepath.Join(bundle, stagedPrefix+"*"))
}

// unstageLeftovers unmounts, when the engine starts, the staging points
// of every container that a previous engine left: a container made by
// then holds its own mounts, and the next start stages anew. (A rootless
// engine starts in a new mount namespace, where only the empty points
// are left.)
func (e *Engine) unstageLeftovers() {
	unstage(filepath.Join(e.opts.StateDir, "containers", "*", stagedPrefix+"*"))
}

func unstage(pattern string) {
	points, _ := filepath.Glob(pattern)
	for _, p := range points {
		unix.Unmount(p, unix.MNT_DETACH)
		os.Remove(p)
	}
}

// openMountRoot opens the directory a bind or volume mount of c shows:
// its source, or the subpath of the volume, found inside the volume as at
// start.
func openMountRoot(c *container.Container, mp *containertypes.MountPoint) (*archive.Root, error) {
	r, err := archive.Open(mp.Source)
	sub := subpathOf(c.HostConfig, mp.Destination)
	if err != nil || sub == "" {
		return r, err
	}
	defer r.Close()
	fd, err := openSubpath(r, sub, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, fmt.Errorf("volume at %s, subpath %s: %w", mp.Destination, sub, err)
	}
	p := filepath.Join(mp.Source, sub)
	return archive.New(inroot.FromFd(fd, p), p), nil
}

// openSubpathDir opens the directory sub of the volume directory dir for
// the volume's copy-up; the path it returns is the open directory's
// /proc/self/fd link, valid until closed.
func openSubpathDir(dir, sub string) (string, func(), error) {
	r, err := archive.Open(dir)
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	fd, err := openSubpath(r, sub, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", nil, err
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), func() { unix.Close(fd) }, nil
}
