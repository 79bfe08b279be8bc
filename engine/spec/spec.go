package spec

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// EtcFiles are host files the engine prepared for the container; each is
// bind-mounted at its place in /etc when set.
type EtcFiles struct {
	Hosts      string
	Hostname   string
	ResolvConf string
}

// Input is everything Build needs to know about one container.
type Input struct {
	// ID is the container's 64-hex id.
	ID string
	// Rootfs is the absolute path of the mounted root filesystem.
	Rootfs string
	// Image, when set, means Config is the create request as the client
	// sent it, to be completed with the image's config (MergeConfig). Leave
	// it nil when Config was merged at create, as the engine stores it.
	Image *dockerspec.DockerOCIImage
	// Config and HostConfig are the container's (HostConfig may be nil).
	Config     *container.Config
	HostConfig *container.HostConfig
	// Hostname is the resolved hostname; "" means Config.Hostname, else the
	// host's for --network host, else the first 12 characters of ID (as
	// Docker).
	Hostname string
	// NetNSPath is the network namespace to join for the default and
	// user-defined networks and --network container:<id>; "" gives the
	// container a new, empty one. --network none always gets a new one,
	// --network host none at all.
	NetNSPath string
	// PidNSPath is the PID namespace of --pid container:<id>, which the
	// engine resolves to that container's process.
	PidNSPath string
	// IpcNSPath is the IPC namespace of --ipc container:<id>, which the
	// engine resolves to that container's process.
	IpcNSPath string
	// ShmPath is the directory bound at /dev/shm for --ipc shareable and
	// container:<id>: a tmpfs the engine mounted for the shareable one.
	ShmPath string
	// EtcFiles are bind-mounted over /etc/hosts, /etc/hostname and
	// /etc/resolv.conf.
	EtcFiles EtcFiles
	// LinkEnv are the environment variables of the container's legacy
	// links, which its own variables override.
	LinkEnv []string
	// Volumes are the directories of the container's volumes by
	// destination: those of its volume mounts (Binds, Mounts) and of its
	// anonymous volumes (Config.Volumes), which are mounted where no
	// other mount is.
	Volumes map[string]string
	// Inherited are the mount points --volumes-from copied from other
	// containers at create (volumes and binds), mounted where the
	// container's own Binds, Mounts and Tmpfs are not.
	Inherited []container.MountPoint
	// Subpaths are, by destination, where the engine bound the subpaths of
	// volume mounts (VolumeOptions.Subpath), resolved inside their volume.
	Subpaths map[string]string
	// Images are, by destination, where the engine bound the images of
	// image mounts (their ImageOptions.Subpath, if any), each resolved
	// inside its image.
	Images map[string]string
	// Rootless: the engine runs in a user namespace (rootlesskit's), so it
	// cannot raise rlimits above its own and the host's IPC namespace is
	// not its own.
	Rootless bool
	// SingleUID: that user namespace maps only id 0.
	SingleUID bool
	// InitPath is the binary --init runs as pid 1 (at /sbin/docker-init);
	// "" means --init is refused.
	InitPath string
	// DefaultUlimits are daemon.json's default-ulimits; the request's
	// Ulimits win per name.
	DefaultUlimits []*container.Ulimit
	// HostRlimits are the engine's own limits by --ulimit name ("nofile");
	// nil means ask getrlimit(2). Tests set them.
	HostRlimits map[string]Rlimit
	// SeccompProfile is the daemon's default seccomp profile (daemon.json
	// seccomp-profile): "" or SeccompBuiltin for Docker's,
	// SeccompUnconfined for none, else a profile's JSON.
	SeccompProfile string
	// NoSeccomp: the kernel has no seccomp filters. Containers then run
	// unconfined, and one naming a profile is refused, as in Docker.
	NoSeccomp bool
}

type builder struct {
	in   Input
	cfg  *container.Config
	hc   *container.HostConfig
	spec *specs.Spec
	caps capSet

	init            bool // --init applies (private pid namespace)
	writableCgroups bool
	cgroupsOpt      *bool // security-opt writable-cgroups, if given
	noNewPrivileges bool
	seccomp         string       // --security-opt seccomp=, if given
	devices         []userDevice // --device, resolved with the resources
	warnings        []string
}

// Build returns the OCI runtime spec for in, and warnings for settings it
// accepted but cannot honour. Errors are classed: errdefs.ErrInvalidArgument
// for requests Docker refuses too (or that cannot work in this engine's
// user namespace), errdefs.ErrNotImplemented for Docker features hutch does
// not have yet. Build reads the rootfs's /etc/passwd and /etc/group, stats
// bind sources and may read the engine's rlimits; it changes nothing.
//
// The spec still has to go through shim.AdjustSpec for the host.
func Build(in Input) (*specs.Spec, []string, error) {
	b, err := newBuilder(in)
	if err != nil {
		return nil, nil, err
	}
	steps := []func() error{b.security, b.namespaces, b.process, b.seccompFilter, b.linux, b.fileSystem}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, nil, err
		}
	}
	return b.spec, b.warnings, nil
}

func newBuilder(in Input) (*builder, error) {
	if len(in.ID) < 12 {
		return nil, fmt.Errorf("container id %q is too short: %w", in.ID, errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(in.Rootfs) {
		return nil, fmt.Errorf("rootfs %q is not an absolute path: %w", in.Rootfs, errdefs.ErrInvalidArgument)
	}
	if in.Config == nil {
		return nil, fmt.Errorf("no container config: %w", errdefs.ErrInvalidArgument)
	}
	cfg := in.Config
	if in.Image != nil {
		var err error
		if cfg, err = MergeConfig(cfg, &in.Image.Config); err != nil {
			return nil, err
		}
	}
	hc := in.HostConfig
	if hc == nil {
		hc = &container.HostConfig{}
	}
	return &builder{
		in:  in,
		cfg: cfg,
		hc:  hc,
		spec: &specs.Spec{
			Version: specs.Version,
			Root:    &specs.Root{Path: filepath.Clean(in.Rootfs), Readonly: hc.ReadonlyRootfs},
			Process: &specs.Process{},
			Linux:   &specs.Linux{},
		},
		caps: hostCaps(),
	}, nil
}

// security applies HostConfig.SecurityOpt with Docker's parsing.
func (b *builder) security() error {
	for _, opt := range b.hc.SecurityOpt {
		switch opt {
		case "no-new-privileges":
			b.noNewPrivileges = true
			continue
		case "writable-cgroups":
			if err := b.setWritableCgroups(true); err != nil {
				return err
			}
			continue
		case "disable":
			continue
		}
		k, v, ok := cutSecurityOpt(opt)
		if !ok {
			return fmt.Errorf("invalid --security-opt 1: %q: %w", opt, errdefs.ErrInvalidArgument)
		}
		switch k {
		case "label", "apparmor":
			// No SELinux or AppArmor here; Docker ignores them likewise on
			// hosts without.
		case "seccomp":
			b.seccomp = v
		case "no-new-privileges", "writable-cgroups":
			on, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("invalid --security-opt 2: %q: %w", opt, errdefs.ErrInvalidArgument)
			}
			if k == "no-new-privileges" {
				b.noNewPrivileges = on
			} else if err := b.setWritableCgroups(on); err != nil {
				return err
			}
		default:
			return fmt.Errorf("invalid --security-opt 2: %q: %w", opt, errdefs.ErrInvalidArgument)
		}
	}
	if b.cgroupsOpt == nil {
		// Docker's default: writable for privileged containers only.
		b.writableCgroups = b.hc.Privileged
	} else {
		b.writableCgroups = *b.cgroupsOpt
	}
	return nil
}

func (b *builder) setWritableCgroups(on bool) error {
	if b.in.Rootless {
		return fmt.Errorf("option WritableCgroups conflicts with user namespaces and rootless mode: %w", errdefs.ErrInvalidArgument)
	}
	b.cgroupsOpt = &on
	return nil
}

// namespaces: a new mount, pid, ipc, uts and network namespace unless the
// request shares the host's; never a user namespace (containers share the
// engine's, rootlesskit's).
func (b *builder) namespaces() error {
	hc := b.hc
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	switch {
	case !hc.PidMode.Valid():
		return fmt.Errorf("invalid PID mode: %v: %w", hc.PidMode, errdefs.ErrInvalidArgument)
	case hc.PidMode.IsContainer():
		if !filepath.IsAbs(b.in.PidNSPath) {
			return fmt.Errorf("--pid %s: no PID namespace to join: %w", hc.PidMode, errdefs.ErrInvalidArgument)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: b.in.PidNSPath})
	case !hc.PidMode.IsHost():
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	}
	switch {
	case !hc.IpcMode.Valid():
		return fmt.Errorf("invalid IPC mode: %v: %w", hc.IpcMode, errdefs.ErrInvalidArgument)
	case hc.IpcMode.IsContainer():
		if !filepath.IsAbs(b.in.IpcNSPath) || !filepath.IsAbs(b.in.ShmPath) {
			return fmt.Errorf("--ipc %s: no IPC namespace to join: %w", hc.IpcMode, errdefs.ErrInvalidArgument)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: b.in.IpcNSPath})
	case !hc.IpcMode.IsHost():
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace})
	}
	switch {
	case !hc.UTSMode.Valid():
		return fmt.Errorf("invalid UTS mode: %v: %w", hc.UTSMode, errdefs.ErrInvalidArgument)
	case hc.UTSMode.IsHost():
		// The host's hostname stays. Docker refuses a hostname with
		// --uts host at create, on the request: the stored config has one
		// filled in by then, so that check is not Build's.
	default:
		ns = append(ns, specs.LinuxNamespace{Type: specs.UTSNamespace})
	}
	net := hc.NetworkMode
	switch {
	case net.IsContainer() || net == "container":
		// The engine resolves the other container to its namespace.
		if b.in.NetNSPath == "" || !filepath.IsAbs(b.in.NetNSPath) {
			return fmt.Errorf("--network %s: no network namespace to join: %w", net, errdefs.ErrInvalidArgument)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: b.in.NetNSPath})
	case net.IsHost():
	case net.IsNone() || b.cfg.NetworkDisabled || b.in.NetNSPath == "":
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	default:
		if !filepath.IsAbs(b.in.NetNSPath) {
			return fmt.Errorf("network namespace path %q is not absolute", b.in.NetNSPath)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: b.in.NetNSPath})
	}
	switch {
	case !hc.CgroupnsMode.Valid():
		return fmt.Errorf("invalid cgroup namespace mode: %v: %w", hc.CgroupnsMode, errdefs.ErrInvalidArgument)
	case hc.CgroupnsMode.IsPrivate(), hc.CgroupnsMode.IsEmpty() && cgroup2():
		// Docker's default: private on cgroup v2, the host's on v1.
		ns = append(ns, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	b.spec.Linux.Namespaces = ns
	return nil
}

var cgroup2 = sync.OnceValue(cgroups.IsCgroup2UnifiedMode)

func (b *builder) hasNamespace(t specs.LinuxNamespaceType) bool {
	for _, ns := range b.spec.Linux.Namespaces {
		if ns.Type == t {
			return true
		}
	}
	return false
}

// hostname is Docker's: the request's, else the host's with host
// networking, else the short id.
func (b *builder) hostname() (string, error) {
	switch {
	case b.in.Hostname != "":
		return b.in.Hostname, nil
	case b.cfg.Hostname != "":
		return b.cfg.Hostname, nil
	case b.hc.NetworkMode.IsHost():
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("hostname for --network host: %w", err)
		}
		return h, nil
	}
	return b.in.ID[:12], nil
}

func (b *builder) process() error {
	p, cfg, hc := b.spec.Process, b.cfg, b.hc
	p.Args = commandLine(cfg)
	if len(p.Args) == 0 {
		return fmt.Errorf("no command specified: %w", errdefs.ErrInvalidArgument)
	}
	if hc.Init != nil && *hc.Init && b.hasNamespace(specs.PIDNamespace) {
		// Like Docker, --init applies only where the container has its own
		// pid 1 to replace.
		if b.in.InitPath == "" {
			return fmt.Errorf("--init is not supported: no init binary is configured: %w", errdefs.ErrInvalidArgument)
		}
		if !filepath.IsAbs(b.in.InitPath) {
			return fmt.Errorf("init binary %q is not an absolute path", b.in.InitPath)
		}
		b.init = true
		p.Args = append([]string{InitDestination, "--"}, p.Args...)
	}
	hostname, err := b.hostname()
	if err != nil {
		return err
	}
	if b.hasNamespace(specs.UTSNamespace) {
		b.spec.Hostname = hostname
		b.spec.Domainname = cfg.Domainname
	}
	p.Env = processEnv(cfg, hostname, b.in.LinkEnv)
	if p.Cwd, err = workingDir(cfg); err != nil {
		return err
	}
	p.Terminal = cfg.Tty
	if cfg.Tty && hc.ConsoleSize != [2]uint{} {
		p.ConsoleSize = &specs.Box{Height: hc.ConsoleSize[0], Width: hc.ConsoleSize[1]}
	}
	if p.User, err = ResolveUser(b.in.Rootfs, cfg.User, hc.GroupAdd, b.in.SingleUID); err != nil {
		return err
	}
	p.User.Umask = hc.Umask
	caps, err := b.caps.capabilities(hc.CapAdd, hc.CapDrop, hc.Privileged)
	if err != nil {
		return err
	}
	p.Capabilities = &specs.LinuxCapabilities{Bounding: caps}
	if p.User.UID == 0 {
		// A non-root process keeps only the bounding set (for setuid
		// binaries and file capabilities), as in Docker.
		p.Capabilities.Permitted = caps
		p.Capabilities.Effective = caps
	}
	if p.Rlimits, err = b.rlimits(); err != nil {
		return err
	}
	p.NoNewPrivileges = b.noNewPrivileges
	if hc.OomScoreAdj != 0 {
		// Docker always writes it; writing 0 fails for a rootless engine
		// whose own score is higher (lowering needs CAP_SYS_RESOURCE).
		p.OOMScoreAdj = ptr(hc.OomScoreAdj)
	}
	return nil
}

// linux fills the Linux section beyond namespaces: resources, sysctls,
// masked and read-only paths.
func (b *builder) linux() error {
	l, hc := b.spec.Linux, b.hc
	res, err := b.resources()
	if err != nil {
		return err
	}
	l.Resources = res
	sysctl := map[string]string{}
	if b.hasNamespace(specs.NetworkNamespace) {
		// Docker's default in a network namespace of the container's own:
		// any port without CAP_NET_BIND_SERVICE. (Its ping_group_range
		// default is skipped in a user namespace, as Docker does: the range
		// covers unmapped groups.)
		sysctl["net.ipv4.ip_unprivileged_port_start"] = "0"
	}
	maps.Copy(sysctl, hc.Sysctls)
	if len(sysctl) > 0 {
		l.Sysctl = sysctl
	}
	if !hc.Privileged {
		l.MaskedPaths = DefaultMaskedPaths()
		l.ReadonlyPaths = DefaultReadonlyPaths()
	}
	if hc.MaskedPaths != nil {
		l.MaskedPaths = append([]string{}, hc.MaskedPaths...)
	}
	if hc.ReadonlyPaths != nil {
		l.ReadonlyPaths = append([]string{}, hc.ReadonlyPaths...)
	}
	if len(hc.Annotations) > 0 {
		b.spec.Annotations = maps.Clone(hc.Annotations)
	}
	return nil
}

// DefaultMaskedPaths are the paths an unprivileged container cannot see,
// Docker's list (which the engine records at create, as Docker does).
func DefaultMaskedPaths() []string { return slices.Clone(maskedPaths()) }

// DefaultReadonlyPaths are the paths an unprivileged container cannot
// write, Docker's list.
func DefaultReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

// maskedPaths is Docker's list, with the per-CPU thermal_throttle
// directories of this host (GHSA-6fw5-f8r9-fgfm).
var maskedPaths = sync.OnceValue(func() []string {
	p := []string{
		"/proc/acpi",
		"/proc/asound",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/sys/devices/virtual/powercap",
		"/sys/firmware",
	}
	thermal, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	// In CPU order, as Docker lists them (and inspect shows them): cpu2
	// before cpu10.
	slices.SortFunc(thermal, func(a, b string) int { return cmp.Compare(cpuNumber(a), cpuNumber(b)) })
	return append(p, thermal...)
})

// cpuNumber is the n of /sys/devices/system/cpu/cpu<n>/….
func cpuNumber(path string) int {
	rest, _ := strings.CutPrefix(path, "/sys/devices/system/cpu/cpu")
	n, _ := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
	return n
}

func (b *builder) fileSystem() error {
	if b.hc.ShmSize < 0 {
		return fmt.Errorf("SHM size can not be less than 0: %w", errdefs.ErrInvalidArgument)
	}
	user, err := b.userMounts()
	if err != nil {
		return err
	}
	if b.spec.Mounts, err = b.mounts(user); err != nil {
		return err
	}
	for _, m := range b.spec.Mounts {
		if !path.IsAbs(m.Destination) {
			return fmt.Errorf("mount destination %q is not absolute", m.Destination)
		}
	}
	return nil
}
