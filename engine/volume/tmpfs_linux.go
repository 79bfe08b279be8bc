package volume

import (
	"errors"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// Tmpfs reports whether v is a tmpfs of the local driver (type=tmpfs): its
// directory has a tmpfs mounted while containers use it, and what they
// wrote goes when the last of them stops, as with Docker's local driver.
func (v *Volume) Tmpfs() bool { return v.Options["type"] == "tmpfs" }

// mountFlags are the words of a local volume's o option that are mount
// flags (set, or cleared when clear), as mount(8) reads them; the others
// go to the filesystem as its data.
var mountFlags = map[string]struct {
	flag  uintptr
	clear bool
}{
	"ro":          {unix.MS_RDONLY, false},
	"rw":          {unix.MS_RDONLY, true},
	"nosuid":      {unix.MS_NOSUID, false},
	"suid":        {unix.MS_NOSUID, true},
	"nodev":       {unix.MS_NODEV, false},
	"dev":         {unix.MS_NODEV, true},
	"noexec":      {unix.MS_NOEXEC, false},
	"exec":        {unix.MS_NOEXEC, true},
	"sync":        {unix.MS_SYNCHRONOUS, false},
	"async":       {unix.MS_SYNCHRONOUS, true},
	"dirsync":     {unix.MS_DIRSYNC, false},
	"noatime":     {unix.MS_NOATIME, false},
	"atime":       {unix.MS_NOATIME, true},
	"nodiratime":  {unix.MS_NODIRATIME, false},
	"diratime":    {unix.MS_NODIRATIME, true},
	"relatime":    {unix.MS_RELATIME, false},
	"norelatime":  {unix.MS_RELATIME, true},
	"strictatime": {unix.MS_STRICTATIME, false},
}

// tmpfsData are the keys tmpfs(5) takes as data; their values are the
// kernel's to check, when the volume is mounted.
var tmpfsData = map[string]bool{
	"size": true, "nr_blocks": true, "nr_inodes": true, "mode": true,
	"uid": true, "gid": true, "huge": true, "mpol": true,
	"inode32": true, "inode64": true, "noswap": true,
}

// tmpfsOptions splits the o option of a tmpfs volume into mount flags and
// tmpfs data. A word that is neither is refused when the volume is made,
// not when a container first mounts it.
func tmpfsOptions(o string) (flags uintptr, data string, err error) {
	var kept []string
	for _, w := range strings.Split(o, ",") {
		if w == "" {
			continue
		}
		if f, ok := mountFlags[w]; ok {
			if f.clear {
				flags &^= f.flag
			} else {
				flags |= f.flag
			}
			continue
		}
		key, _, _ := strings.Cut(w, "=")
		if !tmpfsData[key] {
			return 0, "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid tmpfs volume option %q in o=%q", w, o))
		}
		kept = append(kept, w)
	}
	return flags, strings.Join(kept, ","), nil
}

// Acquire mounts the tmpfs of volume v on its directory for one more
// container, if none had it mounted; other volumes need nothing. Each
// Acquire that succeeds takes one Release.
func (s *Store) Acquire(v *Volume) error {
	if !v.Tmpfs() {
		return nil
	}
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	if s.users[v.Name] > 0 {
		s.users[v.Name]++
		return nil
	}
	flags, data, err := tmpfsOptions(v.Options["o"])
	if err != nil {
		return err
	}
	dir := s.mountpoint(v.Name)
	if mounted(dir) {
		// Mounted for a container adopted after the engine restarted.
		s.users[v.Name] = 1
		return nil
	}
	if err := unix.Mount(v.Options["device"], dir, "tmpfs", flags, data); err != nil {
		return fmt.Errorf("error while mounting volume '%s': failed to mount local volume: mount %s:%s, data: %s: %w", dir, v.Options["device"], dir, data, err)
	}
	s.users[v.Name] = 1
	return nil
}

// Release lets go of the mount Acquire gave a container: the last to let
// go unmounts the tmpfs, and its files go with it.
func (s *Store) Release(v *Volume) error {
	if !v.Tmpfs() {
		return nil
	}
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	n := s.users[v.Name]
	if n > 1 {
		s.users[v.Name] = n - 1
		return nil
	}
	if n == 0 {
		return nil
	}
	delete(s.users, v.Name)
	err := unix.Unmount(s.mountpoint(v.Name), unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmounting volume %s: %w", v.Name, err)
	}
	return nil
}

// UnmountUnused unmounts the tmpfs of volumes no container acquired: after
// a restart of the engine, those its containers left mounted when they
// stopped meanwhile.
func (s *Store) UnmountUnused() error {
	vols, err := s.List()
	if err != nil {
		return err
	}
	s.mountMu.Lock()
	defer s.mountMu.Unlock()
	var errs []error
	for _, v := range vols {
		if dir := s.mountpoint(v.Name); v.Tmpfs() && s.users[v.Name] == 0 && mounted(dir) {
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmounting volume %s: %w", v.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mounted reports whether dir is the root of a mount of its own: on
// another device than its parent.
func mounted(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(dir+"/..", &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
