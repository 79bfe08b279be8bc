package storage

import (
	"io"
	"os"
	"strings"

	"github.com/vbatts/tar-split/archive/tar"
	"go.podman.io/storage/pkg/archive"
	"golang.org/x/sys/unix"
)

// One function per kind of archive entry, as containers/storage's
// extractTarFileEntry makes them (extract_linux.go).

func (x *extractor) mkdir(e *entryCtx) error {
	merge := false
	for {
		err := unix.Mkdirat(e.parent.fd, e.base, e.mode()&0o1777)
		if err == nil {
			break
		}
		if err != unix.EEXIST {
			return &os.PathError{Op: "mkdir", Path: e.key, Err: err}
		}
		if merge, err = x.replace(e); err != nil {
			return err
		}
		if merge {
			break
		}
	}
	fd, err := unix.Openat(e.parent.fd, e.base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: e.key, Err: err}
	}
	d, err := x.dirMeta(e, fd, merge)
	if err != nil {
		unix.Close(fd)
		return err
	}
	if len(x.dirs) >= maxCachedDirs {
		x.forgetDirs()
	}
	if old, ok := x.dirs[e.key]; ok {
		x.retired = append(x.retired, old.fd)
	}
	x.dirs[e.key] = d
	ts := chtimesSpec(e.hdr.AccessTime, e.hdr.ModTime)
	x.times = append(x.times, dirTimes{name: e.key, atime: ts[0], mtime: ts[1]})
	return nil
}

// dirMeta sets owner, mode and xattrs of a directory made (or merged) for
// e and returns it as a cache entry.
func (x *extractor) dirMeta(e *entryCtx, fd int, merge bool) (dirHandle, error) {
	chowned := false
	if merge {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return dirHandle{}, err
		}
		if int(st.Uid) != e.uid || int(st.Gid) != e.gid {
			if err := x.chown(fd, e.key, e.parent, e.uid, e.gid); err != nil {
				return dirHandle{}, err
			}
			chowned = true
		}
	} else {
		var err error
		if chowned, err = x.chownNewReport(fd, e); err != nil {
			return dirHandle{}, err
		}
	}
	if merge || chowned || x.needsChmod(e, true) {
		if err := unix.Fchmod(fd, e.mode()); err != nil {
			return dirHandle{}, &os.PathError{Op: "chmod", Path: e.key, Err: err}
		}
	}
	if err := x.xattrs(e.hdr, fd, -1, e.key); err != nil {
		return dirHandle{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return dirHandle{}, err
	}
	return dirHandle{fd: fd, setgid: st.Mode&unix.S_ISGID != 0, gid: st.Gid}, nil
}

// chownNewReport is chownNew for e's new entry open as fd, reporting
// whether it changed the owner.
func (x *extractor) chownNewReport(fd int, e *entryCtx) (bool, error) {
	haveGID := x.egid
	if e.parent.setgid {
		haveGID = int(e.parent.gid)
	}
	if e.uid == x.euid && e.gid == haveGID {
		return false, nil
	}
	return true, x.chown(fd, e.key, e.parent, e.uid, e.gid)
}

// file makes a regular file. Its content and the rest (owner, mode, times)
// go to the metadata pipe's goroutine, which writes them while the next
// entries are made; a file with extended attributes is waited for, as
// setting them touches the extractor's state.
func (x *extractor) file(e *entryCtx, content io.Reader) error {
	x.takeOpenSlot()
	var fd int
	if err := x.make(e, "open", func() (err error) {
		fd, err = unix.Openat(e.parent.fd, e.base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, e.mode()&0o777)
		return err
	}); err != nil {
		<-x.openFiles
		return err
	}
	f := &fileSink{x: x, e: *e, fd: fd, chmod: x.needsChmod(e, false)}
	err := x.readContent(content, f)
	x.meta.contentDone(f, err == nil)
	if err == nil && hasXattrs(e.hdr) {
		x.meta.wait()
	}
	return err
}

// takeOpenSlot bounds the files the pipe has yet to finish, each one open.
func (x *extractor) takeOpenSlot() {
	select {
	case x.openFiles <- struct{}{}:
	default:
		x.meta.flush() // the pipe may need what is recorded to free one
		x.openFiles <- struct{}{}
	}
}

// maxOpenFiles is how many extracted files may wait, open, for the pipe.
const maxOpenFiles = 128

// fileSink is a regular file being extracted, written and finished by the
// metadata pipe's goroutine.
type fileSink struct {
	x     *extractor
	e     entryCtx
	fd    int
	chmod bool // the mode the kernel gave at creation is not the entry's
	ended bool
}

func (f *fileSink) write(b []byte) error {
	if err := writeAll(f.fd, b); err != nil {
		return &os.PathError{Op: "write", Path: f.e.key, Err: err}
	}
	return nil
}

func (f *fileSink) finish() error {
	err := f.x.finishFile(&f.e, f.fd, f.chmod)
	f.ended = true
	if cerr := unix.Close(f.fd); err == nil && cerr != nil {
		err = &os.PathError{Op: "close", Path: f.e.key, Err: cerr}
	}
	<-f.x.openFiles
	return err
}

func (f *fileSink) abandon() {
	if !f.ended {
		f.ended = true
		unix.Close(f.fd)
		<-f.x.openFiles
	}
}

// finishFile gives a written file its owner, mode, times and extended
// attributes, in that order: a change of owner clears set-id bits and
// file capabilities.
func (x *extractor) finishFile(e *entryCtx, fd int, chmod bool) error {
	chowned, err := x.chownNewReport(fd, e)
	if err != nil {
		return err
	}
	if chowned || chmod {
		if err := unix.Fchmod(fd, e.mode()); err != nil {
			return &os.PathError{Op: "chmod", Path: e.key, Err: err}
		}
	}
	a, m := e.atime()
	if err := futimens(fd, &[2]unix.Timespec{a, m}); err != nil {
		return &os.PathError{Op: "chtimes", Path: e.key, Err: err}
	}
	return x.xattrs(e.hdr, fd, -1, e.key)
}

// hasXattrs reports whether hdr has attributes for x.xattrs to set.
func hasXattrs(hdr *tar.Header) bool {
	for key := range hdr.PAXRecords {
		if strings.HasPrefix(key, archive.PaxSchilyXattr) {
			return true
		}
	}
	return false
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// make creates e's entry with mk; an entry already there under that name is
// replaced (x.replace) and mk tried again.
func (x *extractor) make(e *entryCtx, op string, mk func() error) error {
	for {
		err := mk()
		if err == nil {
			return nil
		}
		if err != unix.EEXIST {
			return &os.PathError{Op: op, Path: e.key, Err: err}
		}
		if _, err := x.replace(e); err != nil {
			return err
		}
	}
}

// node makes a device node or a FIFO.
func (x *extractor) node(e *entryCtx) error {
	mode := e.mode()
	switch e.hdr.Typeflag {
	case tar.TypeBlock:
		mode |= unix.S_IFBLK
	case tar.TypeChar:
		mode |= unix.S_IFCHR
	default:
		mode |= unix.S_IFIFO
	}
	dev := int(unix.Mkdev(uint32(e.hdr.Devmajor), uint32(e.hdr.Devminor)))
	if err := x.make(e, "mknod", func() error { return unix.Mknodat(e.parent.fd, e.base, mode, dev) }); err != nil {
		return err
	}
	if err := x.chownNew(-1, e.base, e.parent, e.uid, e.gid); err != nil {
		return err
	}
	if err := e.chmodTimes(); err != nil {
		return err
	}
	return x.xattrs(e.hdr, -1, e.parent.fd, e.base)
}

func (x *extractor) symlink(e *entryCtx) error {
	if err := x.make(e, "symlink", func() error { return unix.Symlinkat(e.hdr.Linkname, e.parent.fd, e.base) }); err != nil {
		return err
	}
	if err := x.chownNew(-1, e.base, e.parent, e.uid, e.gid); err != nil {
		return err
	}
	at := e.hdr.AccessTime
	if at.Before(e.hdr.ModTime) {
		at = e.hdr.ModTime
	}
	ts := lutimesSpec(at, e.hdr.ModTime)
	if err := unix.UtimesNanoAt(e.parent.fd, e.base, ts[:], unix.AT_SYMLINK_NOFOLLOW); err != nil && err != unix.ENOSYS {
		return &os.PathError{Op: "lutimes", Path: e.key, Err: err}
	}
	return x.xattrs(e.hdr, -1, e.parent.fd, e.base)
}

// hardlink links to an entry of the layer; its target is resolved in the
// layer like any name.
func (x *extractor) hardlink(e *entryCtx) error {
	// The link's owner, mode and times are its target's: the target's
	// own, set by the pipe, must not come after them.
	x.meta.wait()
	tdir, tbase := splitName(e.hdr.Linkname)
	tfd, err := openInRoot(x.root, relDir(tdir), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return &os.PathError{Op: "link", Path: e.hdr.Linkname, Err: err}
	}
	defer unix.Close(tfd)
	if err := x.make(e, "link", func() error { return unix.Linkat(tfd, tbase, e.parent.fd, e.base, 0) }); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(e.parent.fd, e.base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "lstat", Path: e.key, Err: err}
	}
	if int(st.Uid) != e.uid || int(st.Gid) != e.gid {
		if err := x.chown(-1, e.base, e.parent, e.uid, e.gid); err != nil {
			return err
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		if err := e.chmodTimes(); err != nil {
			return err
		}
	}
	return x.xattrs(e.hdr, -1, e.parent.fd, e.base)
}
