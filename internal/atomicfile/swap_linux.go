package atomicfile

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Swap replaces path with data as Write does without durable, through a
// spare file kept beside it (TempPrefix, base name, "-spare"): the data
// is written into the spare in place and the two names are exchanged
// (renameat2 RENAME_EXCHANGE), so the spare then holds the old content
// for the next call to overwrite. A file rewritten at about the same size
// then costs no inode and no block allocated or freed, where Write's
// rename over the old file frees both: on a filesystem mounted with -o
// discard, freeing a block waits for its discard, which took up to 300
// ms of a container's start under concurrent starts.
//
// Calls for one path must not run concurrently. Where names cannot be
// exchanged (a filesystem without RENAME_EXCHANGE, or no file at path
// yet) the spare is renamed over path, as Write does.
func Swap(path string, data []byte, perm os.FileMode) error {
	spare := filepath.Join(filepath.Dir(path), TempPrefix+filepath.Base(path)+"-spare")
	f, err := os.OpenFile(spare, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	err = fill(f, data, perm)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(spare)
		return err
	}
	err = unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		err = os.Rename(spare, path)
	}
	if err != nil {
		os.Remove(spare)
	}
	return err
}

// fill makes f hold data, with permissions perm.
func fill(f *os.File, data []byte, perm os.FileMode) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &os.PathError{Op: "swap", Path: f.Name(), Err: unix.EINVAL}
	}
	if fi.Mode().Perm() != perm {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	if fi.Size() > int64(len(data)) {
		return f.Truncate(int64(len(data)))
	}
	return nil
}
