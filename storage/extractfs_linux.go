package storage

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/hutch-engine/hutch/internal/inroot"
	"golang.org/x/sys/unix"
)

// The file system side of layer extraction (extract_linux.go): every name
// is resolved from a directory file descriptor, parents inside the layer's
// directory (package inroot's InRoot scope), so a symlink in the layer resolves inside the layer's
// directory as it would in containers/storage's chroot, and the last
// element of a name is never followed.

// maxCachedDirs bounds the directory descriptors an extraction holds.
const maxCachedDirs = 512

// dirHandle is an open directory of the layer being extracted.
type dirHandle struct {
	fd     int
	setgid bool   // new entries inherit gid (and directories the bit)
	gid    uint32 // the directory's group
}

// openInRoot opens name (relative to root, "" is root itself) with every
// symlink and ".." resolved inside root and magic links refused; the
// error is the bare errno.
func openInRoot(root int, name string, flags int) (int, error) {
	return inroot.OpenAt(root, name, flags, 0, inroot.InRoot)
}

// dir returns the directory name (a cleaned path relative to the layer
// root, "" for the root) open, creating missing elements as
// containers/storage does (mode 0777 less the umask, owned by the
// layer's root).
func (x *extractor) dir(name string) (dirHandle, error) {
	if name == "" {
		return x.rootDir, nil
	}
	if d, ok := x.dirs[name]; ok {
		return d, nil
	}
	fd, err := openInRoot(x.root, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err == unix.ENOENT {
		return x.mkdirAll(name)
	}
	if err != nil {
		return dirHandle{}, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return x.remember(name, fd)
}

func (x *extractor) remember(name string, fd int) (dirHandle, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return dirHandle{}, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if len(x.dirs) >= maxCachedDirs {
		x.forgetDirs()
	}
	d := dirHandle{fd: fd, setgid: st.Mode&unix.S_ISGID != 0, gid: st.Gid}
	x.dirs[name] = d
	return d, nil
}

func (x *extractor) mkdirAll(name string) (dirHandle, error) {
	for range 255 {
		d, next, err := x.mkdirAllOnce(name)
		if next == "" {
			return d, err
		}
		name = next
	}
	return dirHandle{}, &os.PathError{Op: "mkdir", Path: name, Err: unix.ELOOP}
}

// mkdirAllOnce creates the missing elements of name. When an element is
// a dangling symlink it returns the name that symlink leads to instead,
// as containers/storage (SecureJoin, then MkdirAll) follows it.
func (x *extractor) mkdirAllOnce(name string) (_ dirHandle, next string, _ error) {
	parent, parentName := x.rootDir, ""
	elems := strings.Split(name, "/")
	for i, elem := range elems {
		cur := joinRel(parentName, elem)
		d, ok := x.dirs[cur]
		if !ok {
			fd, err := openInRoot(x.root, cur, unix.O_RDONLY|unix.O_DIRECTORY)
			if err == unix.ENOENT {
				err = unix.Mkdirat(parent.fd, elem, 0o777)
				if err == unix.EEXIST {
					target, lerr := inroot.Readlinkat(parent.fd, elem)
					if lerr != nil {
						return dirHandle{}, "", &os.PathError{Op: "mkdir", Path: cur, Err: err}
					}
					if !path.IsAbs(target) {
						target = path.Join(parentName, target)
					}
					rest := path.Join(append([]string{"/", target}, elems[i+1:]...)...)
					return dirHandle{}, strings.TrimPrefix(rest, "/"), nil
				}
				if err == nil {
					fd, err = unix.Openat(parent.fd, elem, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				}
				if err == nil {
					if err = x.chownNew(fd, cur, parent, x.rootIDs[0], x.rootIDs[1]); err != nil {
						unix.Close(fd)
					}
				}
			}
			if err != nil {
				return dirHandle{}, "", &os.PathError{Op: "mkdir", Path: cur, Err: err}
			}
			if d, err = x.remember(cur, fd); err != nil {
				return dirHandle{}, "", err
			}
		}
		parent, parentName = d, cur
	}
	return parent, "", nil
}

// forgetDirs empties the cache: after an entry was removed or replaced,
// a cached name may no longer lead where it did. The descriptors are
// closed before the next entry (the current one may still use one).
func (x *extractor) forgetDirs() {
	for name, d := range x.dirs {
		x.retired = append(x.retired, d.fd)
		delete(x.dirs, name)
	}
}

// closeRetired closes the descriptors forgetDirs dropped.
func (x *extractor) closeRetired() {
	for _, fd := range x.retired {
		unix.Close(fd)
	}
	x.retired = x.retired[:0]
}

func joinRel(dir, elem string) string {
	if dir == "" {
		return elem
	}
	return dir + "/" + elem
}

// chownNew gives a new entry (fd, or name in parent when fd < 0) the
// owner uid:gid unless it already has it: a new entry belongs to the
// engine's effective ids, or its parent's group when that is setgid.
// Errors are ignored in single-UID mode, as containers/storage's
// ignore_chown_errors does.
func (x *extractor) chownNew(fd int, name string, parent dirHandle, uid, gid int) error {
	haveGID := x.egid
	if parent.setgid {
		haveGID = int(parent.gid)
	}
	if uid == x.euid && gid == haveGID {
		return nil
	}
	return x.chown(fd, name, parent, uid, gid)
}

// chown sets the owner of fd, or of name in parent when fd < 0.
func (x *extractor) chown(fd int, name string, parent dirHandle, uid, gid int) error {
	var err error
	if fd >= 0 {
		err = unix.Fchown(fd, uid, gid)
	} else {
		err = unix.Fchownat(parent.fd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil || x.opts.ignoreChownErrors {
		return nil
	}
	if err == unix.EINVAL {
		return fmt.Errorf("potentially insufficient UIDs or GIDs available in user namespace (requested %d:%d for %s): check /etc/subuid and /etc/subgid: %w",
			uid, gid, name, err)
	}
	return &os.PathError{Op: "lchown", Path: name, Err: err}
}

// epoch and maxTime bound the times containers/storage's Chtimes sets.
var (
	epoch   = time.Unix(0, 0)
	maxTime = time.Unix(0, 1<<63-1)
)

// chtimesSpec is containers/storage's Chtimes: times out of range become
// the epoch.
func chtimesSpec(atime, mtime time.Time) [2]unix.Timespec {
	clamp := func(t time.Time) unix.Timespec {
		if t.Before(epoch) || t.After(maxTime) {
			t = epoch
		}
		return unix.NsecToTimespec(t.UnixNano())
	}
	return [2]unix.Timespec{clamp(atime), clamp(mtime)}
}

// lutimesSpec is containers/storage's symlink times: a zero time is left
// alone.
func lutimesSpec(atime, mtime time.Time) [2]unix.Timespec {
	conv := func(t time.Time) unix.Timespec {
		if t.IsZero() {
			return unix.Timespec{Nsec: unix.UTIME_OMIT}
		}
		return unix.NsecToTimespec(t.UnixNano())
	}
	return [2]unix.Timespec{conv(atime), conv(mtime)}
}

// futimens sets the times of an open file (utimensat with a NULL path).
func futimens(fd int, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// setxattr sets an extended attribute on fd, or on name in dir (never
// followed) when fd < 0.
func setxattr(fd, dir int, name, attr string, value []byte) error {
	if fd >= 0 {
		return unix.Fsetxattr(fd, attr, value, 0)
	}
	// No lsetxattrat: go through the directory's descriptor in /proc.
	return unix.Lsetxattr("/proc/self/fd/"+strconv.Itoa(dir)+"/"+name, attr, value, 0)
}

var (
	umaskOnce sync.Once
	umaskVal  uint32
	umaskOK   bool
)

// processUmask reads the umask without changing it (umask(2) would, for
// every thread of the engine).
func processUmask() (uint32, bool) {
	umaskOnce.Do(func() {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
				umaskVal, umaskOK = uint32(n), err == nil
				return
			}
		}
	})
	return umaskVal, umaskOK
}

// openat2Works reports whether the kernel has openat2 (Linux 5.6), which
// staged extraction is kept to.
func openat2Works() bool { return inroot.HasOpenat2() }
