package archive

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
)

// ContainerPath makes p absolute and clean, keeping what asks for the
// directory a final symlink leads to, as Docker does: a last element "."
// (".", "/.", "./", "dir/./") gives "/." or "dir/." (the directory's
// content, archived as "./…"), a trailing "/" gives "dir/".
func ContainerPath(p string) string {
	clean := path.Join("/", p)
	switch {
	case p != "" && path.Base(p) == ".":
		clean = strings.TrimSuffix(clean, "/") + "/."
	case clean != "/" && strings.HasSuffix(p, "/"):
		clean += "/"
	}
	return clean
}

// StatName is the name Docker gives the Entry at abs (filepath.Base).
func StatName(abs string) string {
	if abs == "/" {
		return "/"
	}
	return path.Base(abs)
}

// FileError words a lookup failure as Docker does. A file named as a
// directory ("/etc/passwd/", "/etc/passwd/x") is not a missing file: as
// in Docker, it is its lstat's "not a directory", unclassed (500).
func FileError(err error, p, ref string) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("Could not find the file %s in container %s", p, ref))
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return &fs.PathError{Op: "lstat", Path: ContainerPath(p), Err: syscall.ENOTDIR}
	case errors.As(err, &errno) && errno == syscall.ELOOP:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s in container %s: too many levels of symbolic links", p, ref))
	}
	return err
}

// entryName cleans a tar Entry's name into a path relative to the
// extraction directory. A name that climbs out of it is refused, as
// Docker's breakout check does; "." is the directory itself.
func entryName(name string) (string, error) {
	clean := path.Clean("/" + name)
	if rel := path.Clean(name); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%q is outside of the extraction directory", name))
	}
	if clean == "/" {
		return ".", nil
	}
	return clean[1:], nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// checkLink refuses the links Docker refuses: a hard link whose target
// climbs out of the extraction directory, and a relative symlink that
// points above it. Absolute symlinks are fine: they resolve inside the
// container.
func checkLink(dest, full string, typ byte, linkname string) error {
	switch typ {
	case tarTypeLink:
		if _, err := entryName(linkname); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("hard link %q is outside of %q", linkname, dest))
		}
	case tarTypeSymlink:
		if !path.IsAbs(linkname) && !within(dest, path.Join(path.Dir(full), linkname)) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("symlink %q -> %q is outside of %q", full, linkname, dest))
		}
	}
	return nil
}

// tar type flags, named here so that the pure checks need no archive/tar.
const (
	tarTypeLink    = '1'
	tarTypeSymlink = '2'
)

// Decompress undoes the compressions Docker accepts in PUT archive that Go
// reads without helper binaries; xz and zstd are refused.
func Decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(6)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return gzip.NewReader(br)
	case bytes.HasPrefix(head, []byte("BZh")):
		return bzip2.NewReader(br), nil
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}), bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return nil, errdefs.ErrNotImplemented.WithMessage("xz and zstd archives are not supported: send a plain tar")
	}
	return br, nil
}

// fileMode is Go's FileMode for a stat(2) mode, as os.Lstat makes it
// (PathStat carries Go's encoding).
func fileMode(m uint32) os.FileMode {
	mode := os.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= os.ModeDevice
	case syscall.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= os.ModeDir
	case syscall.S_IFIFO:
		mode |= os.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= os.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= os.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}
