package storage

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Regular files are created by the metadata pipe's goroutine, the one
// that writes their content, not by the parser's. Creating 11 500 files
// was most of the parser's system time in a pull on ext4 (about 250 of
// 295 ms), and the parser is the pull's critical path; the pipe's
// goroutine had time to spare (issue 7).
//
// The parser goes on while the pipe has yet to create what it was given,
// so it must not touch a name the pipe may still create. The extraction
// starts in an empty directory, so a name exists only if the extraction
// made it: made holds every name made, as its parent directory's inode and
// its base name (a directory reached through a symlink is the same
// directory). A regular file whose name is new is the pipe's to create.
// Before anything else touches a name made before, and before a name is
// looked up on the file system (a directory not in the cache), the parser
// waits for the pipe to catch up (settle). Neither happens in an ordinary
// layer but after the directory cache was emptied. When the directory is
// not empty at the start, the parser creates every file itself.

// entryName is a name in a directory of the layer.
type entryName struct {
	dev, ino uint64 // the directory's
	base     string
}

// claim records that the extraction makes base in parent, and reports
// whether it made that name before; if so, the pipe has caught up when
// claim returns.
func (x *extractor) claim(parent dirHandle, base string) (again bool) {
	k := entryName{dev: parent.dev, ino: parent.ino, base: base}
	if _, again = x.made[k]; again {
		x.settle()
		return true
	}
	x.made[k] = struct{}{}
	return false
}

// settle waits for the pipe to have done everything it was given, its
// files created, written and finished, if it was given a file since it
// last caught up.
func (x *extractor) settle() {
	if x.handed > 0 {
		x.meta.wait()
		x.handed = 0
	}
}

// releaseRetired closes the directory descriptors forgetDirs dropped. While
// the pipe may still create files in them, the pipe closes them once it
// has.
func (x *extractor) releaseRetired() {
	if len(x.retired) == 0 {
		return
	}
	if !x.handOff || x.handed == 0 {
		x.closeRetired()
		return
	}
	fds := slices.Clone(x.retired)
	x.retired = x.retired[:0]
	x.meta.later(func() { closeFDs(fds) })
}

// isEmptyDir reports whether the directory open as fd has no entries. It
// leaves fd's offset at the start.
func isEmptyDir(fd int) bool {
	buf := make([]byte, 4096)
	n, err := unix.Getdents(fd, buf)
	if _, serr := unix.Seek(fd, 0, 0); err != nil || serr != nil {
		return false
	}
	_, count, _ := unix.ParseDirent(buf[:n], -1, nil)
	return count == 0
}
