package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/errdefs"
)

// ResetRootfs empties the writable layer of rootfs id so that another
// container of the same image can take it: the layer is unmounted and its
// upper and work directories are made anew as the overlay driver makes
// them (the upper's root with the mode and owner of the image's top
// layer), unless they are as that would leave them (a container that
// wrote nothing: its mount points are in the init layer). Only the
// overlay drivers can; vfs layers are full copies, and
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
	diffMode := fi.Mode() & modeBits
	if pristine(filepath.Join(dir, "diff"), diffMode, st.Uid, st.Gid) && workClean(filepath.Join(dir, "work")) {
		// The container wrote nothing (its mount points are in the init
		// layer): the layer is as remake would leave it but for the
		// overlay's own work/work, which the next mount would delete
		// and make again. Deleted here, off the path of that start: on a
		// filesystem mounted with -o discard the rmdir waits for the
		// discard of the directory's block, 40 ms of a start under
		// concurrent starts.
		if err := os.RemoveAll(filepath.Join(dir, "work", "work")); err != nil {
			return fmt.Errorf("storage: emptying rootfs %s: %w", id, err)
		}
		return nil
	}
	if err := remake(filepath.Join(dir, "diff"), diffMode, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("storage: emptying rootfs %s: %w", id, err)
	}
	if err := remake(filepath.Join(dir, "work"), 0o700, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("storage: emptying rootfs %s: %w", id, err)
	}
	return nil
}

// modeBits are the bits of a mode that remake sets.
const modeBits = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

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

// pristine reports whether upper directory p is as remake leaves it:
// empty, with that mode and owner, and no extended attribute but the
// uuid overlay records at every mount (uuid=on, the default).
func pristine(p string, mode os.FileMode, uid, gid uint32) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || fi.Mode()&modeBits != mode {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid || st.Gid != gid {
		return false
	}
	names, err := listXattrs(p)
	if err != nil {
		return false
	}
	for _, n := range names {
		if n != "user.overlay.uuid" && n != "trusted.overlay.uuid" {
			return false
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// workClean reports whether overlay work directory p holds nothing but
// what a clean unmount leaves: work/, empty but for the marker a volatile
// mount leaves, incompat/volatile/dirty (MountRootfs removes it before the
// next mount).
func workClean(p string) bool {
	for _, want := range []struct{ dir, only string }{
		{p, "work"},
		{filepath.Join(p, "work"), "incompat"},
		{filepath.Join(p, "work", "incompat"), "volatile"},
		{filepath.Join(p, "work", "incompat", "volatile"), "dirty"},
	} {
		names, err := readNames(want.dir)
		if errors.Is(err, os.ErrNotExist) && want.dir != p {
			return true
		}
		if err != nil || len(names) > 1 || len(names) == 1 && names[0] != want.only {
			return false
		}
		if len(names) == 0 {
			return true
		}
	}
	fi, err := os.Lstat(filepath.Join(p, "work", "incompat", "volatile", "dirty"))
	return err == nil && fi.Mode().IsRegular()
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
