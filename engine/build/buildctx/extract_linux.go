package buildctx

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hutch-engine/hutch/internal/inroot"
	"go.podman.io/storage/pkg/archive"
	"golang.org/x/sys/unix"
)

// Extract unpacks the (possibly compressed) tar r into dir, which must
// exist and be empty, and returns the Context. Untrusted input: entry
// names with ".." that leave dir and hard links whose target leaves dir
// are errors; absolute names lose their leading "/"; device and FIFO
// entries are skipped; symlinks are made as they are, and every entry is
// created relative to its parent directory resolved inside dir (package
// inroot), so a symlink of the archive cannot redirect a
// later entry outside dir. Modes (set-id and sticky bits only if the
// process can set them) and modification times are kept; owners are not.
// A malformed archive is an *Error. After extraction, the paths the
// context's .dockerignore excludes are removed from the tree, except the
// Dockerfile ("Dockerfile" or "dockerfile") and .dockerignore
// themselves. On error, dir may hold part of the archive; the caller
// removes it.
func Extract(r io.Reader, dir string) (*Context, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("build context: %s is not empty", dir)
	}
	root, err := inroot.Open(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	x := &extractor{root: root, dirs: map[string]dirMeta{}, modes: map[uint64]uint32{}, unprivileged: os.Geteuid() != 0}
	if err := x.run(r); err != nil {
		return nil, err
	}
	c := &Context{dir: dir, modes: x.modes}
	if c.priv, err = makePrivate(dir); err != nil {
		return nil, err
	}
	if err := c.applyIgnore(); err != nil {
		return nil, err
	}
	if err := x.finishDirs(); err != nil {
		return nil, err
	}
	return c, nil
}

// makePrivate makes the engine's hidden directory in dir, under a name
// the archive did not use.
func makePrivate(dir string) (string, error) {
	for range 16 {
		b := make([]byte, 8)
		rand.Read(b)
		name := ".buildctx-" + hex.EncodeToString(b)
		err := os.Mkdir(filepath.Join(dir, name), 0o700)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("build context: %w", err)
		}
	}
	return "", errors.New("build context: cannot name a private directory")
}

// dirMeta is what a directory gets once everything is in it.
type dirMeta struct {
	mode  uint32
	times [2]unix.Timespec
}

type extractor struct {
	root         *inroot.Root       // the context directory
	dirs         map[string]dirMeta // directory entries, by clean name
	modes        map[uint64]uint32  // Context.modes
	unprivileged bool               // no CAP_DAC_OVERRIDE, presumably
}

// run reads the archive to its end, making each entry.
func (x *extractor) run(r io.Reader) error {
	dr, err := archive.DecompressStream(r)
	if err != nil {
		return userErrorf("reading the build context: %v", err)
	}
	defer dr.Close()
	tr := tar.NewReader(dr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return userErrorf("reading the build context: %v", err)
		}
		if err := x.entry(hdr, archiveReader{tr}); err != nil {
			return err
		}
	}
}

// entry makes one entry of the archive; its parent directory, resolved
// in the root, is made if missing, and what is at its name is replaced.
func (x *extractor) entry(hdr *tar.Header, content io.Reader) error {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo, tar.TypeXGlobalHeader:
		return nil
	default:
		return userErrorf("build context: %s: unsupported entry type %q", hdr.Name, hdr.Typeflag)
	}
	if isSparse(hdr) {
		return userErrorf("build context: %s: sparse files are not supported", hdr.Name)
	}
	name, err := cleanName(hdr.Name)
	if err != nil || name == "" {
		return err
	}
	dir, base := path.Split(name)
	pfd, err := x.mkdirAll(dir)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	isDir := hdr.Typeflag == tar.TypeDir
	if err := x.clear(pfd, name, base, isDir); err != nil {
		return err
	}
	mode, times := uint32(hdr.Mode)&0o7777, entryTimes(hdr)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fsError("mkdir", name, err)
		}
		x.dirs[name] = dirMeta{mode, times}
		return nil
	case tar.TypeReg:
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fsError("create", name, err)
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		if _, err := io.Copy(f, content); err != nil {
			return fsError("write", name, err)
		}
		if err := x.setMode(fd, name, mode, false); err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
			return fsError("symlink", name, err)
		}
	case tar.TypeLink:
		target, err := cleanName(hdr.Linkname)
		if err != nil || target == "" {
			return userErrorf("build context: hard link %q to %q is outside of the context", hdr.Name, hdr.Linkname)
		}
		tdir, tbase := path.Split(target)
		tfd, err := x.open(tdir)
		if err != nil {
			return fsError("open", tdir, err)
		}
		// No AT_SYMLINK_FOLLOW: a link to a symlink is that symlink.
		err = unix.Linkat(tfd, tbase, pfd, base, 0)
		unix.Close(tfd)
		if err != nil {
			return fsError("link", name, err)
		}
		return nil // the target's metadata is the link's
	}
	if err := unix.UtimesNanoAt(pfd, base, times[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fsError("utimes", name, err)
	}
	return nil
}

// clear removes what is at base in pfd unless the new entry and it are
// both directories.
func (x *extractor) clear(pfd int, name, base string, isDir bool) error {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fsError("lstat", name, err)
	}
	if isDir && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil
	}
	delete(x.dirs, name)
	if err := inroot.RemoveAllAt(pfd, base); err != nil {
		return fsError("remove", name, err)
	}
	return nil
}

// finishDirs sets the modes and times of the directories of the
// archive, deepest first so that a directory that loses its owner's
// permissions is the last thing looked up through.
func (x *extractor) finishDirs() error {
	names := make([]string, 0, len(x.dirs))
	for n := range x.dirs {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		return di > dj || di == dj && names[i] < names[j]
	})
	for _, n := range names {
		if err := x.finishDir(n, x.dirs[n]); err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) finishDir(name string, m dirMeta) error {
	dir, base := path.Split(name)
	pfd, err := x.open(dir)
	if err != nil {
		return nil // removed, or moved away by .dockerignore
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if err := x.setMode(fd, name, m.mode, true); err != nil {
		return err
	}
	if err := unix.UtimesNanoAt(pfd, base, m.times[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fsError("utimes", name, err)
	}
	return nil
}
