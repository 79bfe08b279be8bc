package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/system"
	"golang.org/x/sys/unix"
)

// The init layer of an image holds the mount points every container of
// it gets (Docker's init layer, made once per image instead of once per
// container): /proc, /sys and /dev, and /etc/hostname, /etc/hosts and
// /etc/resolv.conf, where the image lacks them. It sits between the image
// and the writable layer of each container mounted by this store, so the
// runtime finds its mount points and creates nothing in the writable
// layer. A container that writes nothing leaves its upper directory
// empty, and its reset has nothing to delete (ResetRootfs).
//
// Without it, every start made those seven entries in the upper directory
// (overlay creates and copy-ups on ext4, in the path of the start) and
// every reset deleted them and made the upper and work directories anew:
// 9 of the about 20 inodes a container made (and as many it freed) on
// the data dir, which ext4 pays more for under load (it skips recently
// freed inodes at each allocation).
//
// The layer is made through an overlay mount of the image, so that a
// directory it adds to (/etc) is copied up with the image's mode, owner,
// times and extended attributes, exactly as the runtime's creation copied
// it up. Entries under a symbolic link or a non-directory are left to the
// runtime. Layers live in <graphroot>/hutch-init/<top layer ID>; they go
// with the image's top layer (DeleteImage) and at Open when their layer
// is gone.

// initMountPoints are the mount points of every container (engine/spec).
var initMountPoints = []struct {
	path string
	dir  bool
}{
	{"proc", true}, {"sys", true}, {"dev", true},
	{"etc/hostname", false}, {"etc/hosts", false}, {"etc/resolv.conf", false},
}

const initLayersDir = "hutch-init"

// initLayer returns the init layer of the image whose layers (top first)
// are lowers, made on first use; false when it cannot be made (the
// runtime then creates the mount points in each container's layer, as it
// would without one).
func (s *Store) initLayer(lowers []string) (string, bool) {
	if len(lowers) == 0 {
		return "", false
	}
	top := filepath.Base(filepath.Dir(lowers[0]))
	dir := filepath.Join(s.opts.GraphRoot, initLayersDir, top)
	if _, err := os.Lstat(dir); err == nil {
		return dir, true
	}
	if _, failed := s.initFailed.Load(top); failed {
		return "", false
	}
	defer s.layerLocks.lock("init:" + top)()
	if _, err := os.Lstat(dir); err == nil {
		return dir, true
	}
	if _, failed := s.initFailed.Load(top); failed {
		return "", false
	}
	if err := makeInitLayer(dir, lowers); err != nil {
		// Not tried again until the daemon restarts.
		s.initFailed.Store(top, true)
		s.log.Warn("storage: no init layer; containers make their mount points", "layer", top, "err", err)
		return "", false
	}
	return dir, true
}

// makeInitLayer makes dir, the init layer over lowers, in a staging
// directory beside it that is renamed into place once complete.
func makeInitLayer(dir string, lowers []string) (err error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(parent, ".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		_ = unmountPath(filepath.Join(stage, "merged"))
		if rerr := os.RemoveAll(stage); err == nil && rerr != nil {
			err = rerr
		}
	}()
	upper, work, merged := filepath.Join(stage, "diff"), filepath.Join(stage, "work"), filepath.Join(stage, "merged")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	data := overlayData(lowers, upper, work)
	if len(data) >= os.Getpagesize() {
		return errors.New("mount data too long")
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		return fmt.Errorf("mounting the image: %w", err)
	}
	root, err := unix.Open(merged, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	for _, m := range initMountPoints {
		if err = addMountPoint(root, m.path, m.dir); err != nil {
			break
		}
	}
	unix.Close(root)
	if err != nil {
		return err
	}
	if err := unmountPath(merged); err != nil {
		return err
	}
	if err := stripOverlayXattrs(upper); err != nil {
		return err
	}
	return os.Rename(upper, dir)
}

// addMountPoint makes p (relative, in root) where it is missing: a
// directory, or an empty file, with the modes the runtime gives them.
// Missing parents are made as directories; a parent that is a symbolic
// link or not a directory leaves p to the runtime.
func addMountPoint(root int, p string, isDir bool) error {
	parts := strings.Split(p, "/")
	fd, err := unix.Dup(root)
	if err != nil {
		return err
	}
	defer func() { unix.Close(fd) }()
	for _, name := range parts[:len(parts)-1] {
		err := unix.Mkdirat(fd, name, 0o755)
		if err == nil {
			if err := unix.Fchmodat(fd, name, 0o755, 0); err != nil {
				return err
			}
		} else if !errors.Is(err, unix.EEXIST) {
			return err
		}
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil // the runtime resolves it in the container's root
		}
		if err != nil {
			return err
		}
		unix.Close(fd)
		fd = next
	}
	name := parts[len(parts)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return nil // the image has it
	} else if !errors.Is(err, unix.ENOENT) {
		return err
	}
	if isDir {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			return err
		}
		return unix.Fchmodat(fd, name, 0o755, 0)
	}
	f, err := unix.Openat(fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	return unix.Fchmod(f, 0o644)
}

// stripOverlayXattrs removes overlayfs's own attributes (origin, impure)
// that the copy-ups left in dir: the layer is a lower layer from now on.
func stripOverlayXattrs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		names, err := listXattrs(p)
		if err != nil {
			return err
		}
		for _, n := range names {
			if strings.HasPrefix(n, "user.overlay.") || strings.HasPrefix(n, "trusted.overlay.") {
				if err := unix.Lremovexattr(p, n); err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
			}
		}
		return nil
	})
}

// listXattrs is containers/storage's Llistxattr, with none on a file
// system without extended attributes.
func listXattrs(p string) ([]string, error) {
	names, err := system.Llistxattr(p)
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	return names, err
}

// removeInitLayers deletes the init layers of the given layers.
func (s *Store) removeInitLayers(layers []string) {
	for _, id := range layers {
		dir := filepath.Join(s.opts.GraphRoot, initLayersDir, id)
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn("storage: cannot remove an init layer", "dir", dir, "err", err)
		}
	}
}

// sweepInitLayers deletes init layers whose image layer is gone and the
// staging directories of makes a crash interrupted.
func (s *Store) sweepInitLayers() error {
	parent := filepath.Join(s.opts.GraphRoot, initLayersDir)
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(parent, e.Name())
		if strings.HasPrefix(e.Name(), ".tmp-") {
			_ = unmountPath(filepath.Join(p, "merged"))
		} else if _, err := s.cs.Layer(e.Name()); !errors.Is(err, cstorage.ErrLayerUnknown) {
			// Only a layer known to be gone: the containers of a daemon
			// before this one may still run on the others.
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
