package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"
)

// ResetRootfs empties the writable layer of rootfs id so that another
// container of the same image can take it: the layer is unmounted and its
// upper and work directories are made anew as the overlay driver makes
// them (the upper's root with the mode and owner of the image's top
// layer). Only the overlay drivers can; vfs layers are full copies, and
// there it is errdefs.ErrNotImplemented. On any error the layer must be
// deleted, never used again.
//
// It saves containers/storage's delete and create of a layer (each a
// rewrite of its JSON metadata and a dozen files and directories).
func (s *Store) ResetRootfs(ctx context.Context, id string) error {
	if s.driver.name == DriverVFS {
		return fmt.Errorf("storage: %s layers cannot be reset: %w", s.driver.name, errdefs.ErrNotImplemented)
	}
	unlock := s.mounts.locks.lock(id)
	defer unlock()
	m := s.mountState(id)
	m.refs = 0 // docker run --rm's layer comes here still mounted
	if err := s.unmountAll(id, m); err != nil {
		return err
	}
	l, err := s.layout(id, m)
	if err != nil {
		return err
	}
	if len(l.lowers) == 0 {
		return fmt.Errorf("storage: rootfs %s has no image layer below it", id)
	}
	fi, err := os.Stat(l.lowers[0])
	if err != nil {
		return fmt.Errorf("storage: image layer of rootfs %s: %w", id, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("storage: image layer of rootfs %s: no owner", id)
	}
	dir := l.dir
	diffMode := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	if err := remake(filepath.Join(dir, "diff"), diffMode, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("storage: emptying rootfs %s: %w", id, err)
	}
	if err := remake(filepath.Join(dir, "work"), 0o700, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("storage: emptying rootfs %s: %w", id, err)
	}
	return nil
}

// remake replaces directory p (and all below it) with an empty one.
func remake(p string, mode os.FileMode, uid, gid int) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		return err
	}
	if err := os.Lchown(p, uid, gid); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}
