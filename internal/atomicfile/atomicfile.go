// Package atomicfile replaces files whole or not at all: the content goes
// to a temporary file in the same directory, which is renamed over the
// target, so that a reader, and the next start after a crash of any
// process, sees the old or the new content, never a torn one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// TempPrefix starts the names of the temporary files; a crash between
// their creation and the rename leaves them behind for their owner to
// remove.
const TempPrefix = ".tmp-"

// Write replaces path with data, with permissions perm. With durable, the
// file is synced before the rename and the directory after it, so that
// the write survives a power loss too; without, it survives the death of
// any process (the page cache keeps it), and saves two syncs.
func Write(path string, data []byte, perm os.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if durable {
		return SyncDir(dir)
	}
	return nil
}

// SyncDir makes the entries of dir (creations, renames, removals) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
