package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// InitDestination is where the --init binary appears in the container, as
// in Docker.
const InitDestination = "/sbin/docker-init"

// DefaultShmSize is Docker's /dev/shm size when ShmSize is 0.
const DefaultShmSize = 64 << 20

// defaultMounts are Docker's (daemon/pkg/oci/defaults.go), /dev/shm sized.
func defaultMounts(shmSize int64) []specs.Mount {
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"ro", "nosuid", "noexec", "nodev"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=" + strconv.FormatInt(shmSize, 10)}},
	}
}

// writableWhenReadonly are the default mounts a read-only rootfs leaves
// writable, as Docker does.
var writableWhenReadonly = []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue"}

// ParseBind parses one HostConfig.Binds entry ("src:dst[:mode]", or "dst"
// for an anonymous volume) with Docker's rules into the equivalent --mount.
// A source that is not an absolute path names a volume (Type volume).
// Errors are errdefs.ErrInvalidArgument with Docker's wording.
func ParseBind(raw string) (mount.Mount, error) {
	invalid := func(err error) error {
		if err == nil {
			return fmt.Errorf("invalid volume specification: '%s': %w", raw, errdefs.ErrInvalidArgument)
		}
		return fmt.Errorf("invalid volume specification: '%s': %w: %w", raw, err, errdefs.ErrInvalidArgument)
	}
	arr := strings.SplitN(raw, ":", 4)
	if arr[0] == "" {
		return mount.Mount{}, invalid(nil)
	}
	var m mount.Mount
	var mode string
	switch len(arr) {
	case 1:
		m.Target = arr[0]
	case 2:
		if validMode(arr[1]) {
			// "/foo:rw": a volume cannot be given a mode without a source.
			return mount.Mount{}, invalid(nil)
		}
		m.Source, m.Target = arr[0], arr[1]
	case 3:
		m.Source, m.Target, mode = arr[0], arr[1], arr[2]
	default:
		return mount.Mount{}, invalid(nil)
	}
	if !validMode(mode) {
		return mount.Mount{}, fmt.Errorf("invalid mode: %s: %w", mode, errdefs.ErrInvalidArgument)
	}
	m.Type = mount.TypeVolume
	if path.IsAbs(m.Source) {
		m.Type = mount.TypeBind
	}
	for o := range strings.SplitSeq(mode, ",") {
		switch {
		case o == "ro":
			m.ReadOnly = true
		case propagations[o]:
			m.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(o)}
		case o == "nocopy":
			m.VolumeOptions = &mount.VolumeOptions{NoCopy: true}
		}
	}
	if err := checkTarget(m.Target); err != nil {
		return mount.Mount{}, invalid(&mountConfigError{m.Type, err})
	}
	if m.Type == mount.TypeBind {
		if m.VolumeOptions != nil {
			return mount.Mount{}, invalid(&mountConfigError{m.Type, errors.New("field VolumeOptions must not be specified")})
		}
		m.Source = path.Clean(m.Source)
	}
	m.Target = path.Clean(m.Target)
	return m, nil
}

var propagations = map[string]bool{
	"private": true, "rprivate": true, "shared": true, "rshared": true, "slave": true, "rslave": true,
}

// validMode reports whether mode is a comma list with at most one option of
// each of Docker's classes: rw/ro, SELinux label (z, Z: accepted and
// ignored, there is no SELinux here), propagation, copy, consistency.
func validMode(mode string) bool {
	if mode == "" {
		return true
	}
	var counts [5]int
	for o := range strings.SplitSeq(mode, ",") {
		switch {
		case o == "rw" || o == "ro":
			counts[0]++
		case o == "z" || o == "Z":
			counts[1]++
		case propagations[o]:
			counts[2]++
		case o == "nocopy":
			counts[3]++
		case o == "consistent" || o == "cached" || o == "delegated":
			counts[4]++
		default:
			return false
		}
	}
	for _, n := range counts {
		if n > 1 {
			return false
		}
	}
	return true
}

// mountConfigError words an invalid mount as Docker does.
type mountConfigError struct {
	typ mount.Type
	err error
}

func (e *mountConfigError) Error() string {
	return fmt.Sprintf("invalid mount config for type %q: %v", e.typ, e.err)
}

func (e *mountConfigError) Unwrap() error { return e.err }

// checkTarget accepts absolute container paths other than "/". A ".." in
// an absolute path cannot climb above "/" once cleaned, and the runtime
// resolves the cleaned path inside the rootfs.
func checkTarget(target string) error {
	switch {
	case target == "":
		return errors.New("field Target must not be empty")
	case !path.IsAbs(target):
		return fmt.Errorf("invalid mount path: '%s' mount path must be absolute", target)
	case path.Clean(target) == "/":
		return errors.New("invalid specification: destination can't be '/'")
	case strings.ContainsRune(target, 0):
		return fmt.Errorf("invalid mount path: %q contains a NUL byte", target)
	}
	return nil
}

// specMount turns one --mount (or parsed -v) into an OCI mount.
func (b *builder) specMount(m mount.Mount) (specs.Mount, error) {
	invalid := func(err error) error {
		return fmt.Errorf("%w: %w", &mountConfigError{m.Type, err}, errdefs.ErrInvalidArgument)
	}
	switch {
	case m.Type != mount.TypeBind && m.BindOptions != nil:
		return specs.Mount{}, invalid(errors.New("field BindOptions must not be specified"))
	case m.Type != mount.TypeVolume && m.VolumeOptions != nil:
		return specs.Mount{}, invalid(errors.New("field VolumeOptions must not be specified"))
	case m.Type != mount.TypeTmpfs && m.TmpfsOptions != nil:
		return specs.Mount{}, invalid(errors.New("field TmpfsOptions must not be specified"))
	case m.Type != mount.TypeImage && m.ImageOptions != nil:
		return specs.Mount{}, invalid(errors.New("field ImageOptions must not be specified"))
	}
	if err := checkTarget(m.Target); err != nil {
		return specs.Mount{}, invalid(err)
	}
	dst := path.Clean(m.Target)
	switch m.Type {
	case mount.TypeBind:
		return b.bindMount(m, dst)
	case mount.TypeTmpfs:
		if m.Source != "" {
			return specs.Mount{}, invalid(errors.New("field Source must not be specified"))
		}
		opts, err := tmpfsOptions(m.TmpfsOptions, m.ReadOnly)
		if err != nil {
			return specs.Mount{}, invalid(err)
		}
		return tmpfsMount(dst, opts), nil
	case mount.TypeVolume:
		if o := m.VolumeOptions; o != nil && o.Subpath != "" {
			src, ok := b.in.Subpaths[dst]
			if !ok {
				return specs.Mount{}, fmt.Errorf("volume at %s: its subpath %s was not prepared: %w", dst, o.Subpath, errdefs.ErrInvalidArgument)
			}
			return volumeMount(dst, src, m.ReadOnly), nil
		}
		dir, ok := b.in.Volumes[dst]
		if !ok {
			return specs.Mount{}, fmt.Errorf("volume at %s: no volume was made for it at create: %w", dst, errdefs.ErrInvalidArgument)
		}
		return volumeMount(dst, dir, m.ReadOnly), nil
	case mount.TypeImage:
		if m.Source == "" {
			return specs.Mount{}, invalid(errors.New("field Source must not be empty"))
		}
		src, ok := b.in.Images[dst]
		if !ok {
			return specs.Mount{}, fmt.Errorf("image mount at %s: the image was not prepared: %w", dst, errdefs.ErrInvalidArgument)
		}
		// Read-only whatever the request says, as in Docker.
		return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind", "ro", "rprivate"}}, nil
	default:
		return specs.Mount{}, invalid(errors.New("mount type unknown"))
	}
}

func (b *builder) bindMount(m mount.Mount, dst string) (specs.Mount, error) {
	invalid := func(err error) error {
		return fmt.Errorf("%w: %w", &mountConfigError{m.Type, err}, errdefs.ErrInvalidArgument)
	}
	switch {
	case m.Source == "":
		return specs.Mount{}, invalid(errors.New("field Source must not be empty"))
	case !path.IsAbs(m.Source):
		return specs.Mount{}, invalid(fmt.Errorf("invalid mount path: '%s' mount path must be absolute", m.Source))
	}
	src := path.Clean(m.Source)
	bo := m.BindOptions
	if bo == nil {
		bo = &mount.BindOptions{}
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		// The engine made those -v and CreateMountpoint ask for.
		return specs.Mount{}, invalid(fmt.Errorf("bind source path does not exist: %s", src))
	} else if err != nil {
		return specs.Mount{}, fmt.Errorf("bind source %s: %w", src, err)
	}
	opts := []string{"rbind"}
	if bo.NonRecursive {
		opts[0] = "bind"
	}
	if m.ReadOnly {
		switch {
		case bo.ReadOnlyNonRecursive && bo.ReadOnlyForceRecursive:
			return specs.Mount{}, invalid(errors.New("mount options conflict: ReadOnlyNonRecursive && ReadOnlyForceRecursive"))
		case bo.ReadOnlyForceRecursive:
			opts = append(opts, "rro")
		default:
			opts = append(opts, "ro")
		}
	}
	prop := string(bo.Propagation)
	switch {
	case prop == "":
		prop = "rprivate"
	case !propagations[prop]:
		return specs.Mount{}, invalid(fmt.Errorf("invalid propagation mode: %s", prop))
	}
	b.rootPropagation(prop)
	opts = append(opts, prop)
	return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts}, nil
}

// rootPropagation makes the rootfs propagation allow what a bind asks for,
// as Docker does: a shared bind needs a shared root, a slave bind a root
// that is at least a slave.
func (b *builder) rootPropagation(prop string) {
	cur := b.spec.Linux.RootfsPropagation
	switch prop {
	case "shared", "rshared":
		if cur != "shared" && cur != "rshared" {
			b.spec.Linux.RootfsPropagation = "shared"
		}
	case "slave", "rslave":
		if cur == "" || cur == "private" || cur == "rprivate" {
			b.spec.Linux.RootfsPropagation = "rslave"
		}
	}
}

// tmpfsOptions converts --mount type=tmpfs options as Docker does.
func tmpfsOptions(o *mount.TmpfsOptions, readOnly bool) ([]string, error) {
	var opts []string
	if readOnly {
		opts = append(opts, "ro")
	}
	if o == nil {
		return opts, nil
	}
	if o.Mode != 0 {
		mode := uint32(o.Mode.Perm())
		for bit, v := range map[os.FileMode]uint32{os.ModeSetuid: 0o4000, os.ModeSetgid: 0o2000, os.ModeSticky: 0o1000} {
			if o.Mode&bit != 0 {
				mode |= v
			}
		}
		opts = append(opts, fmt.Sprintf("mode=%o", mode))
	}
	if size := o.SizeBytes; size != 0 {
		if size < 0 {
			return nil, fmt.Errorf("invalid tmpfs size: %d", size)
		}
		suffix := ""
		for _, u := range []struct {
			suffix string
			n      int64
		}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
			if size%u.n == 0 {
				size, suffix = size/u.n, u.suffix
				break
			}
		}
		opts = append(opts, fmt.Sprintf("size=%d%s", size, suffix))
	}
	for _, kv := range o.Options {
		if len(kv) < 1 || len(kv) > 2 {
			return nil, errors.New("invalid option array length")
		}
		if kv[0] != "exec" && kv[0] != "noexec" {
			return nil, errors.New("invalid option: " + kv[0])
		}
		opts = append(opts, strings.Join(kv, "="))
	}
	return opts, nil
}

// tmpfsMount is a tmpfs with Docker's defaults (noexec, nosuid, nodev,
// private) overridden by opts.
func tmpfsMount(dst string, opts []string) specs.Mount {
	all := append([]string{"noexec", "nosuid", "nodev", "rprivate"}, opts...)
	return specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: mergeOptions(all)}
}

// mergeOptions keeps the last of each set of conflicting mount options
// (exec/noexec, ro/rw, size=…, propagation…) at the place of the first.
func mergeOptions(opts []string) []string {
	key := func(o string) string {
		switch {
		case strings.Contains(o, "="):
			k, _, _ := strings.Cut(o, "=")
			return k + "="
		case o == "ro" || o == "rw":
			return "rw"
		case propagations[o] || o == "unbindable" || o == "runbindable":
			return "propagation"
		case strings.HasPrefix(o, "no") && len(o) > 2:
			return o[2:]
		}
		return o
	}
	at := map[string]int{}
	var out []string
	for _, o := range opts {
		if o == "" || o == "defaults" {
			continue
		}
		if i, ok := at[key(o)]; ok {
			out[i] = o
			continue
		}
		at[key(o)] = len(out)
		out = append(out, o)
	}
	return out
}

// userMounts are the mounts the request asks for: Binds, Mounts and Tmpfs,
// each destination at most once.
func (b *builder) userMounts() ([]specs.Mount, error) {
	hc := b.hc
	var out []specs.Mount
	for _, raw := range hc.Binds {
		m, err := ParseBind(raw)
		if err != nil {
			return nil, err
		}
		sm, err := b.specMount(m)
		if errdefs.IsInvalidArgument(err) {
			return nil, fmt.Errorf("invalid volume specification: '%s': %w", raw, err)
		} else if err != nil {
			return nil, err
		}
		out = append(out, sm)
	}
	for _, m := range hc.Mounts {
		sm, err := b.specMount(m)
		if err != nil {
			return nil, err
		}
		out = append(out, sm)
	}
	for _, dst := range slices.Sorted(maps.Keys(hc.Tmpfs)) {
		if err := checkTarget(dst); err != nil {
			return nil, fmt.Errorf("invalid tmpfs mount %q: %w: %w", dst, err, errdefs.ErrInvalidArgument)
		}
		var opts []string
		if data := hc.Tmpfs[dst]; data != "" {
			opts = strings.Split(data, ",")
		}
		out = append(out, tmpfsMount(path.Clean(dst), opts))
	}
	for _, d := range b.devices {
		out = append(out, d.mount())
	}
	seen := map[string]bool{}
	for _, m := range out {
		if seen[m.Destination] {
			//lint:ignore ST1005 Docker's wording, which clients show as is
			return nil, fmt.Errorf("Duplicate mount point: %s: %w", m.Destination, errdefs.ErrInvalidArgument)
		}
		seen[m.Destination] = true
	}
	for _, mp := range b.in.Inherited {
		if seen[mp.Destination] {
			continue
		}
		sm, err := b.inheritedMount(mp)
		if err != nil {
			return nil, err
		}
		out = append(out, sm)
		seen[mp.Destination] = true
	}
	// The anonymous volumes of Config.Volumes (the image's VOLUME, and
	// -v /path), where no other mount is.
	for _, dst := range slices.Sorted(maps.Keys(b.in.Volumes)) {
		if !seen[dst] {
			out = append(out, volumeMount(dst, b.in.Volumes[dst], false))
		}
	}
	return out, nil
}

// inheritedMount is a mount point --volumes-from copied: a volume's
// directory, or a bind with its propagation, read-only unless RW.
func (b *builder) inheritedMount(mp container.MountPoint) (specs.Mount, error) {
	if mp.Type == mount.TypeVolume {
		return volumeMount(mp.Destination, mp.Source, !mp.RW), nil
	}
	m := mount.Mount{Type: mount.TypeBind, Source: mp.Source, Target: mp.Destination, ReadOnly: !mp.RW,
		BindOptions: &mount.BindOptions{Propagation: mp.Propagation}}
	sm, err := b.bindMount(m, mp.Destination)
	if err != nil {
		return specs.Mount{}, fmt.Errorf("--volumes-from bind at %s: %w", mp.Destination, err)
	}
	return sm, nil
}

// volumeMount binds the volume directory dir at dst.
func volumeMount(dst, dir string, readOnly bool) specs.Mount {
	opts := []string{"rbind", "rprivate"}
	if readOnly {
		opts = append(opts, "ro")
	}
	return specs.Mount{Destination: dst, Type: "bind", Source: dir, Options: opts}
}

// mounts is the spec's mount list: Docker's defaults (minus those a user
// mount replaces), then the engine's files and the user's mounts, parents
// before children.
func (b *builder) mounts(user []specs.Mount) ([]specs.Mount, error) {
	hc := b.hc
	taken := map[string]bool{}
	for _, m := range user {
		taken[m.Destination] = true
	}
	extra, err := b.engineMounts(taken)
	if err != nil {
		return nil, err
	}
	for _, m := range extra {
		taken[m.Destination] = true
	}
	shm := hc.ShmSize
	if shm == 0 {
		shm = DefaultShmSize
	}
	var out []specs.Mount
	for _, m := range defaultMounts(shm) {
		switch {
		case taken[m.Destination], taken["/dev"] && strings.HasPrefix(m.Destination, "/dev/"):
			continue
		case m.Destination == "/dev/shm" && hc.IpcMode.IsNone():
			continue
		case m.Destination == "/dev/shm" && b.in.ShmPath != "":
			// --ipc shareable and container:<id>: the tmpfs the engine
			// mounted for the owner of the IPC namespace.
			m = specs.Mount{Destination: m.Destination, Type: "bind", Source: b.in.ShmPath, Options: []string{"rbind", "nosuid", "noexec", "nodev", "rprivate"}}
		case m.Destination == "/dev/mqueue" && hc.IpcMode.IsHost() && b.in.Rootless:
			// The host's IPC namespace belongs to the initial user
			// namespace: mqueue cannot be mounted for it, only bound.
			m = specs.Mount{Destination: m.Destination, Type: "bind", Source: "/dev/mqueue", Options: []string{"rbind", "nosuid", "noexec", "nodev"}}
		case m.Type == "cgroup" && b.in.Rootless && !cgroup2():
			// Rootless on cgroup v1 there is no cgroup of the container's
			// own to show: the host's hierarchy, read-only, as libcontainer
			// would mount it, but in one recursive bind instead of two
			// mounts per controller (19 here, ~3 ms of every start).
			m = specs.Mount{Destination: m.Destination, Type: "bind", Source: "/sys/fs/cgroup", Options: []string{"rbind", "rro", "nosuid", "noexec", "nodev"}}
		}
		if hc.ReadonlyRootfs && !slices.Contains(writableWhenReadonly, m.Destination) && !slices.Contains(m.Options, "ro") {
			m.Options = append(m.Options, "ro")
		}
		if (m.Destination == "/sys" && hc.Privileged) || (m.Type == "cgroup" && b.writableCgroups) {
			m.Options = slices.DeleteFunc(m.Options, func(o string) bool { return o == "ro" })
		}
		out = append(out, m)
	}
	rest := append(slices.Clone(user), extra...)
	slices.SortStableFunc(rest, func(a, b specs.Mount) int {
		return strings.Count(a.Destination, "/") - strings.Count(b.Destination, "/")
	})
	return append(out, rest...), nil
}

// engineMounts are the files the engine provides (/etc/hosts,
// /etc/hostname, /etc/resolv.conf), the host's /dev/shm for --ipc host and
// the init binary; a user mount at the same place wins, as in Docker.
func (b *builder) engineMounts(taken map[string]bool) ([]specs.Mount, error) {
	var out []specs.Mount
	etcOpts := []string{"rbind", "rprivate"}
	if b.hc.ReadonlyRootfs {
		etcOpts = []string{"rbind", "ro", "rprivate"}
	}
	for _, f := range []struct{ dst, src string }{
		{"/etc/resolv.conf", b.in.EtcFiles.ResolvConf},
		{"/etc/hostname", b.in.EtcFiles.Hostname},
		{"/etc/hosts", b.in.EtcFiles.Hosts},
	} {
		if f.src == "" || taken[f.dst] {
			continue
		}
		if !path.IsAbs(f.src) {
			return nil, fmt.Errorf("%s: source %q is not an absolute path", f.dst, f.src)
		}
		out = append(out, specs.Mount{Destination: f.dst, Type: "bind", Source: f.src, Options: slices.Clone(etcOpts)})
	}
	if b.hc.IpcMode.IsHost() && !taken["/dev/shm"] {
		out = append(out, specs.Mount{Destination: "/dev/shm", Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rprivate"}})
	}
	if b.init {
		out = append(out, specs.Mount{Destination: InitDestination, Type: "bind", Source: b.in.InitPath, Options: []string{"bind", "ro"}})
	}
	return out, nil
}
