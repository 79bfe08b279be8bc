package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hutch-engine/hutch/internal/inroot"
	"github.com/opencontainers/go-digest"
	"github.com/vbatts/tar-split/archive/tar"
	"github.com/vbatts/tar-split/tar/storage"
	"go.podman.io/storage/pkg/archive"
	"go.podman.io/storage/pkg/idtools"
	"golang.org/x/sys/unix"
)

// Layer extraction in the engine's process. containers/storage extracts a
// layer in a re-executed child chrooted into the layer directory, which
// costs a second process, a pipe, a second and third parse of the tar
// stream (its tar-split metadata and its uid log), and three to four times
// the system calls of tar(1) per file (every path is resolved again from
// "/", several times). This extractor parses the stream once and resolves
// every name from directory descriptors (extractfs_linux.go). It follows
// the library's archive.Unpack rule for rule (the same tar-split metadata,
// whiteouts, ownership, modes, times, extended attributes and refusals), so
// a layer is the same whichever of the two made it.

// extractOptions are what the storage driver asks of an extraction.
type extractOptions struct {
	idMappings        *idtools.IDMappings
	ignoreChownErrors bool   // single-UID mode
	overlayWhiteouts  bool   // whiteouts become 0/0 character devices, opaque markers an xattr
	opaqueXattr       string // the xattr marking an opaque directory
	inUserNS          bool   // device nodes cannot be made: they are skipped
	log               *slog.Logger
}

// extractResult is what the layer record needs besides the compressed
// digest.
type extractResult struct {
	uids, gids []uint32     // owners in the archive (whiteouts left out)
	rootMode   *os.FileMode // the mode of the archive's root entry, if any
	diffID     digest.Digest
	size       int64 // of the stream, every byte read counted
}

type dirTimes struct {
	name         string // cleaned, relative to the root; "" is the root
	atime, mtime unix.Timespec
}

type extractor struct {
	opts    extractOptions
	root    int
	rootDir dirHandle
	dirs    map[string]dirHandle
	retired []int
	euid    int
	egid    int
	rootIDs [2]int
	umask   uint32
	umaskOK bool
	meta    *metaPipe
	// openFiles holds a token per file the metadata pipe has yet to
	// finish (see file).
	openFiles chan struct{}
	times     []dirTimes
	uids      map[uint32]struct{}
	gids      map[uint32]struct{}
	result    extractResult
	skipped   []string // xattrs the file system refused
}

// extractLayer extracts the uncompressed tar stream r into the empty
// directory dest and records the stream's tar-split metadata with packer,
// reading r to its end, and returns the stream's digest and size.
func extractLayer(r io.Reader, dest string, opts extractOptions, packer storage.Packer) (extractResult, error) {
	root, err := unix.Open(dest, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return extractResult{}, &os.PathError{Op: "open", Path: dest, Err: err}
	}
	if opts.idMappings == nil {
		opts.idMappings = &idtools.IDMappings{}
	}
	if opts.log == nil {
		opts.log = slog.New(slog.DiscardHandler)
	}
	rootPair := opts.idMappings.RootPair()
	x := &extractor{
		opts: opts, root: root, dirs: map[string]dirHandle{},
		euid: os.Geteuid(), egid: os.Getegid(), rootIDs: [2]int{rootPair.UID, rootPair.GID},
		uids: map[uint32]struct{}{}, gids: map[uint32]struct{}{},
		openFiles: make(chan struct{}, maxOpenFiles),
	}
	x.umask, x.umaskOK = processUmask()
	if _, err := unix.Fgetxattr(root, aclDefault, nil); err == nil {
		x.umaskOK = false // a default ACL, not the umask, shapes new modes
	}
	defer x.close()
	if x.rootDir, err = x.remember("", root); err != nil {
		return extractResult{}, err
	}
	delete(x.dirs, "") // the root is x.rootDir, closed by close
	if err := x.run(r, packer); err != nil {
		return extractResult{}, err
	}
	if len(x.skipped) > 0 {
		opts.log.Warn("storage: ignored xattrs in a layer: the file system does not support them", "errors", x.skipped)
	}
	for id := range x.uids {
		x.result.uids = append(x.result.uids, id)
	}
	for id := range x.gids {
		x.result.gids = append(x.result.gids, id)
	}
	return x.result, nil
}

func (x *extractor) close() {
	x.forgetDirs()
	x.closeRetired()
	unix.Close(x.root)
}

// run is tar-split's disassembly loop (asm.NewInputTarStream) with the
// extraction of each entry in the middle; the metadata itself is made in
// a metaPipe.
func (x *extractor) run(r io.Reader, packer storage.Packer) error {
	x.meta = newMetaPipe(packer)
	err := x.entries(r)
	if merr := x.meta.close(); merr != nil {
		return merr // a name twice: what stopped the extraction
	}
	x.result.diffID = digest.NewDigest(digest.SHA256, x.meta.digest)
	x.result.size = x.meta.size
	if err != nil {
		return err
	}
	return x.setDirTimes()
}

func (x *extractor) entries(r io.Reader) error {
	tr := tar.NewReader(r)
	tr.RawAccounting = true
	for {
		x.closeRetired()
		if x.meta.failed.Load() {
			return nil
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			// Usually 1024 zero bytes.
			x.meta.segment(tr.RawBytes())
			break
		}
		if err != nil {
			return err
		}
		if hdr == nil {
			break
		}
		x.meta.segment(tr.RawBytes())
		if !strings.HasPrefix(path.Base(hdr.Name), archive.WhiteoutPrefix) {
			x.uids[uint32(hdr.Uid)] = struct{}{}
			x.gids[uint32(hdr.Gid)] = struct{}{}
		}
		consumed, err := x.entry(hdr, tr)
		if err != nil {
			return err
		}
		if hdr.Size > 0 && !consumed {
			if err := x.readContent(tr, nil); err != nil {
				return err
			}
		}
		x.meta.file(hdr.Name, hdr.Size)
		x.meta.segment(tr.RawBytes())
	}
	// Padding after the end of the archive belongs to the layer too.
	for {
		buf := x.meta.space()
		n, err := r.Read(buf)
		if n > 0 {
			x.meta.rawSegment(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readContent reads the current entry's content for the metadata; the
// metadata pipe writes it to sink unless sink is nil.
func (x *extractor) readContent(content io.Reader, sink contentSink) error {
	for {
		buf := x.meta.space()
		n, rerr := content.Read(buf)
		if n > 0 {
			x.meta.content(n, sink)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// splitName is containers/storage's createpath.SplitPath: dir is
// absolute and clean, base never contains "/" and is "." only for the
// root.
func splitName(name string) (dir, base string) {
	p := filepath.Clean("/" + name)
	dir, base = filepath.Split(p)
	if base == "" {
		base = "."
	}
	if dir = strings.TrimSuffix(dir, "/"); dir == "" {
		dir = "/"
	}
	return dir, base
}

// relDir turns splitName's dir into a cache key: relative, "" for the root.
func relDir(dir string) string { return strings.TrimPrefix(dir, "/") }

// aclDefault is the xattr of a directory's default ACL.
const aclDefault = "system.posix_acl_default"

// entry extracts one archive entry. consumed reports whether its content
// went through x.crc.
func (x *extractor) entry(hdr *tar.Header, content io.Reader) (consumed bool, err error) {
	// Names are taken as absolute in the layer, as in the library's
	// chroot, where "/" is the destination and "../x" is "/x".
	dir, base := splitName(hdr.Name)
	uid, gid := hdr.Uid, hdr.Gid
	if !x.opts.idMappings.Empty() {
		ids, err := x.opts.idMappings.ToHost(idtools.IDPair{UID: uid, GID: gid})
		if err != nil {
			return false, err
		}
		uid, gid = ids.UID, ids.GID
	}
	if dir == "/" && base == "." {
		if hdr.Typeflag != tar.TypeDir {
			return false, fmt.Errorf("refusing to act on a non-directory entry as the archive root")
		}
		return false, x.rootEntry(hdr, uid, gid)
	}
	whiteout := x.opts.overlayWhiteouts && strings.HasPrefix(base, archive.WhiteoutPrefix)
	parent, err := x.dir(relDir(dir))
	if err != nil {
		if whiteout && errors.Is(err, unix.ENOTDIR) {
			// /.wh.foo then /foo/.wh.bar: foo is already a whiteout.
			return false, nil
		}
		return false, err
	}
	if whiteout {
		return false, x.whiteout(parent, dir, base, uid, gid)
	}
	e := entryCtx{hdr: hdr, parent: parent, key: joinRel(relDir(dir), base), base: base, uid: uid, gid: gid}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return false, x.mkdir(&e)
	case tar.TypeReg:
		return true, x.file(&e, content)
	case tar.TypeBlock, tar.TypeChar:
		if x.opts.inUserNS {
			return false, nil // no device nodes in a user namespace
		}
		return false, x.node(&e)
	case tar.TypeFifo:
		return false, x.node(&e)
	case tar.TypeLink:
		return false, x.hardlink(&e)
	case tar.TypeSymlink:
		return false, x.symlink(&e)
	case tar.TypeXGlobalHeader:
		return false, nil
	}
	return false, fmt.Errorf("unhandled tar header type %d", hdr.Typeflag)
}

// entryCtx is one entry being extracted.
type entryCtx struct {
	hdr      *tar.Header
	parent   dirHandle
	key      string // the entry's cleaned relative name
	base     string
	uid, gid int
}

func (e *entryCtx) mode() uint32 { return uint32(e.hdr.Mode) & 0o7777 }

// atime is the access time containers/storage gives non-directories: never
// before the modification time.
func (e *entryCtx) atime() (a, m unix.Timespec) {
	at := e.hdr.AccessTime
	if at.Before(e.hdr.ModTime) {
		at = e.hdr.ModTime
	}
	ts := chtimesSpec(at, e.hdr.ModTime)
	return ts[0], ts[1]
}

// chmodTimes sets the mode and times of an entry just made that is not a
// symlink: following it is harmless, and fchmodat cannot refuse to follow
// before Linux 6.6.
func (e *entryCtx) chmodTimes() error {
	if err := unix.Fchmodat(e.parent.fd, e.base, e.mode(), 0); err != nil {
		return &os.PathError{Op: "chmod", Path: e.key, Err: err}
	}
	a, m := e.atime()
	if err := unix.UtimesNanoAt(e.parent.fd, e.base, []unix.Timespec{a, m}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chtimes", Path: e.key, Err: err}
	}
	return nil
}

func (x *extractor) rootEntry(hdr *tar.Header, uid, gid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(x.root, &st); err != nil {
		return err
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		if err := x.chown(x.root, ".", x.rootDir, uid, gid); err != nil {
			return err
		}
	}
	mode := uint32(hdr.Mode) & 0o7777
	if err := unix.Fchmod(x.root, mode); err != nil {
		return &os.PathError{Op: "chmod", Path: "/", Err: err}
	}
	if err := x.xattrs(hdr, x.root, -1, "."); err != nil {
		return err
	}
	fm := hdr.FileInfo().Mode()&^os.ModeType | os.ModeDir
	x.result.rootMode = &fm
	x.rootDir.setgid, x.rootDir.gid = mode&unix.S_ISGID != 0, uint32(gid)
	ts := chtimesSpec(hdr.AccessTime, hdr.ModTime)
	x.times = append(x.times, dirTimes{name: "", atime: ts[0], mtime: ts[1]})
	return nil
}

// whiteout converts an AUFS whiteout to overlay's form, as the library's
// overlayWhiteoutConverter does.
func (x *extractor) whiteout(parent dirHandle, dir, base string, uid, gid int) error {
	if base == archive.WhiteoutOpaqueDir {
		if err := unix.Fsetxattr(parent.fd, x.opts.opaqueXattr, []byte{'y'}, 0); err != nil {
			return &os.PathError{Op: "setxattr", Path: dir, Err: err}
		}
		return nil
	}
	orig := strings.TrimPrefix(base, archive.WhiteoutPrefix)
	if orig == "" || orig == "." || orig == ".." {
		return fmt.Errorf("invalid whiteout path %q", path.Join(dir, base))
	}
	if err := unix.Mknodat(parent.fd, orig, unix.S_IFCHR, 0); err != nil {
		if err == unix.ENOTDIR {
			return nil
		}
		return &os.PathError{Op: "mknod", Path: path.Join(dir, orig), Err: err}
	}
	return x.chownNew(-1, orig, parent, uid, gid)
}

// replace makes room for a new entry where base exists in parent. A
// directory stays when the new entry is a directory too (merge).
func (x *extractor) replace(e *entryCtx) (merge bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(e.parent.fd, e.base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, &os.PathError{Op: "lstat", Path: e.key, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && e.hdr.Typeflag == tar.TypeDir {
		return true, nil
	}
	x.forgetDirs()
	if err := inroot.RemoveAllAt(e.parent.fd, e.base); err != nil {
		return false, &os.PathError{Op: "remove", Path: e.key, Err: err}
	}
	return false, nil
}

// created is how the kernel made a new entry: the mode given less the
// umask (and, for directories, the setgid bit of a setgid parent).
func (x *extractor) needsChmod(e *entryCtx, isDir bool) bool {
	if !x.umaskOK {
		return true
	}
	want := e.mode()
	got := want & 0o777 &^ x.umask
	if isDir {
		got |= want & unix.S_ISVTX
		if e.parent.setgid {
			got |= unix.S_ISGID
		}
	}
	return got != want
}

// xattrs sets the archive's SCHILY.xattr records on fd (or on name in
// dir). Attributes the file system or the user namespace refuses are
// skipped with a warning, as the library does.
func (x *extractor) xattrs(hdr *tar.Header, fd, dir int, name string) error {
	for key, value := range hdr.PAXRecords {
		attr, ok := strings.CutPrefix(key, archive.PaxSchilyXattr)
		if !ok || attr == "security.selinux" {
			continue
		}
		if attr == aclDefault {
			x.umaskOK = false
		}
		if err := setxattr(fd, dir, name, attr, []byte(value)); err != nil {
			if err == unix.ENOTSUP || (x.opts.inUserNS && err == unix.EPERM) {
				x.skipped = append(x.skipped, fmt.Sprintf("%s: %s: %v", name, attr, err))
				continue
			}
			return &os.PathError{Op: "setxattr", Path: name, Err: err}
		}
	}
	return nil
}

// setDirTimes sets directory times last, as creating entries in them
// changes them.
func (x *extractor) setDirTimes() error {
	for _, t := range x.times {
		ts := [2]unix.Timespec{t.atime, t.mtime}
		if t.name == "" {
			if err := futimens(x.root, &ts); err != nil {
				return &os.PathError{Op: "chtimes", Path: "/", Err: err}
			}
			continue
		}
		if d, ok := x.dirs[t.name]; ok {
			// Still what the name leads to: a replacement empties the cache.
			if err := futimens(d.fd, &ts); err != nil {
				return &os.PathError{Op: "chtimes", Path: t.name, Err: err}
			}
			continue
		}
		dir, base := splitName(t.name)
		fd, err := openInRoot(x.root, relDir(dir), unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return &os.PathError{Op: "open", Path: dir, Err: err}
		}
		var st unix.Stat_t
		err = unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = unix.UtimesNanoAt(fd, base, ts[:], unix.AT_SYMLINK_NOFOLLOW)
		}
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "chtimes", Path: t.name, Err: err}
		}
	}
	return nil
}
