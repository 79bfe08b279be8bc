package spec

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/container"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestBuildProcess(t *testing.T) {
	in := testInput(t)
	in.Image = &dockerspec.DockerOCIImage{Config: dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{
		Entrypoint: []string{"/docker-entrypoint.sh"},
		Cmd:        []string{"serve"},
		Env:        []string{"PATH=/opt/bin:/bin", "LANG=C"},
		WorkingDir: "/srv",
		User:       "app",
	}}}
	in.Config = &container.Config{Cmd: []string{"serve", "--debug"}, Env: []string{"LANG=C.UTF-8", "X=1"}, Tty: true}
	in.HostConfig.ConsoleSize = [2]uint{40, 120}
	in.HostConfig.Umask = ptr(uint32(0o27))
	s := build(t, in)
	p := s.Process
	if want := []string{"/docker-entrypoint.sh", "serve", "--debug"}; !slices.Equal(p.Args, want) {
		t.Errorf("args = %q, want %q", p.Args, want)
	}
	if want := []string{"PATH=/opt/bin:/bin", "HOSTNAME=0123456789ab", "TERM=xterm", "LANG=C.UTF-8", "X=1"}; !slices.Equal(p.Env, want) {
		t.Errorf("env = %q, want %q", p.Env, want)
	}
	if p.Cwd != "/srv" || !p.Terminal || p.ConsoleSize == nil || p.ConsoleSize.Height != 40 || p.ConsoleSize.Width != 120 {
		t.Errorf("cwd %q terminal %v console %+v", p.Cwd, p.Terminal, p.ConsoleSize)
	}
	if p.User.UID != 1000 || p.User.GID != 1000 || !slices.Equal(p.User.AdditionalGids, []uint32{1000, 10, 29}) || p.User.Umask == nil || *p.User.Umask != 0o27 {
		t.Errorf("user = %+v", p.User)
	}
	// A non-root process keeps only the bounding set.
	if c := p.Capabilities; !slices.Equal(c.Bounding, defaultCaps) || len(c.Effective) != 0 || len(c.Permitted) != 0 || len(c.Inheritable) != 0 || len(c.Ambient) != 0 {
		t.Errorf("capabilities = %+v", c)
	}
	if p.NoNewPrivileges || p.OOMScoreAdj != nil {
		t.Errorf("no-new-privileges %v oom score %v", p.NoNewPrivileges, p.OOMScoreAdj)
	}
	if s.Hostname != "0123456789ab" || s.Root.Path != in.Rootfs || s.Root.Readonly {
		t.Errorf("hostname %q root %+v", s.Hostname, s.Root)
	}
}

func TestBuildRootDefaults(t *testing.T) {
	in := testInput(t)
	s := build(t, in)
	p := s.Process
	if p.Cwd != "/" || p.Terminal || p.ConsoleSize != nil {
		t.Errorf("cwd %q terminal %v", p.Cwd, p.Terminal)
	}
	if p.User.UID != 0 || !slices.Equal(p.User.AdditionalGids, []uint32{0, 10}) {
		t.Errorf("user = %+v", p.User)
	}
	if c := p.Capabilities; !slices.Equal(c.Bounding, defaultCaps) || !slices.Equal(c.Effective, defaultCaps) || !slices.Equal(c.Permitted, defaultCaps) {
		t.Errorf("capabilities = %+v", c)
	}
	if !slices.Equal(s.Linux.ReadonlyPaths, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}) {
		t.Errorf("readonly paths = %q", s.Linux.ReadonlyPaths)
	}
	for _, want := range []string{"/proc/kcore", "/proc/keys", "/sys/firmware", "/proc/interrupts"} {
		if !slices.Contains(s.Linux.MaskedPaths, want) {
			t.Errorf("masked paths %q lack %s", s.Linux.MaskedPaths, want)
		}
	}
	if s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"] != "0" {
		t.Errorf("sysctl = %v", s.Linux.Sysctl)
	}
	if s.Linux.Resources == nil || len(s.Linux.Resources.Devices) != 8 || s.Linux.Resources.Memory != nil || s.Linux.Resources.CPU != nil || s.Linux.Resources.Pids != nil {
		t.Errorf("resources = %+v", s.Linux.Resources)
	}
	if _, ok := namespace(s, specs.UserNamespace); ok {
		t.Error("spec has a user namespace")
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Input)
		err    error
		text   string
	}{
		{name: "no command", modify: func(in *Input) { in.Config.Cmd = nil }, err: errdefs.ErrInvalidArgument, text: "no command specified"},
		{name: "relative workdir", modify: func(in *Input) { in.Config.WorkingDir = "srv" }, err: errdefs.ErrInvalidArgument, text: "needs to be an absolute path"},
		{name: "unknown user", modify: func(in *Input) { in.Config.User = "x" }, err: errdefs.ErrInvalidArgument, text: "unable to find user x: no matching entries in passwd file"},
		{name: "single-UID non-root", modify: func(in *Input) { in.SingleUID = true; in.Config.User = "app" }, err: errdefs.ErrInvalidArgument, text: "single-UID mode"},
		{name: "unknown cap", modify: func(in *Input) { in.HostConfig.CapAdd = []string{"FLY"} }, err: errdefs.ErrInvalidArgument, text: "unknown capability"},
		{name: "init without binary", modify: func(in *Input) { in.HostConfig.Init = ptr(true) }, err: errdefs.ErrInvalidArgument, text: "--init is not supported"},
		{name: "container network without path", modify: func(in *Input) { in.HostConfig.NetworkMode = "container:abc" }, err: errdefs.ErrInvalidArgument, text: "no network namespace to join"},
		{name: "container pid unresolved", modify: func(in *Input) { in.HostConfig.PidMode = "container:abc" }, err: errdefs.ErrInvalidArgument, text: "no PID namespace to join"},
		{name: "container ipc unresolved", modify: func(in *Input) { in.HostConfig.IpcMode = "container:abc" }, err: errdefs.ErrInvalidArgument, text: "no IPC namespace to join"},
		{name: "invalid ipc", modify: func(in *Input) { in.HostConfig.IpcMode = "bogus" }, err: errdefs.ErrInvalidArgument, text: "invalid IPC mode"},
		{name: "bad security opt", modify: func(in *Input) { in.HostConfig.SecurityOpt = []string{"bogus"} }, err: errdefs.ErrInvalidArgument, text: "invalid --security-opt 1"},
		{name: "unknown security opt", modify: func(in *Input) { in.HostConfig.SecurityOpt = []string{"foo=bar"} }, err: errdefs.ErrInvalidArgument, text: "invalid --security-opt 2"},
		{name: "bad no-new-privileges", modify: func(in *Input) { in.HostConfig.SecurityOpt = []string{"no-new-privileges=maybe"} }, err: errdefs.ErrInvalidArgument},
		{name: "writable cgroups rootless", modify: func(in *Input) { in.Rootless = true; in.HostConfig.SecurityOpt = []string{"writable-cgroups=true"} }, err: errdefs.ErrInvalidArgument},
		{name: "negative shm", modify: func(in *Input) { in.HostConfig.ShmSize = -1 }, err: errdefs.ErrInvalidArgument, text: "SHM size"},
		{name: "device mode", modify: func(in *Input) {
			in.HostConfig.Devices = []container.DeviceMapping{{PathOnHost: "/dev/null", CgroupPermissions: "rx"}}
		}, err: errdefs.ErrInvalidArgument, text: "invalid device mode: rx"},
		{name: "device missing", modify: func(in *Input) { in.HostConfig.Devices = []container.DeviceMapping{{PathOnHost: "/dev/nope"}} },
			err: errdefs.ErrInvalidArgument, text: `error gathering device information while adding custom device "/dev/nope": no such file or directory`},
		{name: "device not a node", modify: func(in *Input) { in.HostConfig.Devices = []container.DeviceMapping{{PathOnHost: in.Rootfs}} },
			err: errdefs.ErrInvalidArgument, text: "not a device node"},
		{name: "nano cpus and quota", modify: func(in *Input) { in.HostConfig.NanoCPUs = 1e9; in.HostConfig.CPUQuota = 5000 }, err: errdefs.ErrInvalidArgument, text: "Conflicting options"},
		{name: "negative cpu shares", modify: func(in *Input) { in.HostConfig.CPUShares = -2 }, err: errdefs.ErrInvalidArgument},
		{name: "short id", modify: func(in *Input) { in.ID = "abc" }, err: errdefs.ErrInvalidArgument},
		{name: "relative rootfs", modify: func(in *Input) { in.Rootfs = "rootfs" }, err: errdefs.ErrInvalidArgument},
		{name: "no config", modify: func(in *Input) { in.Config = nil }, err: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.modify(&in)
			s, w, err := Build(in)
			if !errors.Is(err, tt.err) || !strings.Contains(fmtErr(err), tt.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.err, tt.text)
			}
			if s != nil || w != nil {
				t.Errorf("spec %v and warnings %v along with the error", s, w)
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestBuildNetwork(t *testing.T) {
	const joined = "/run/user/1000/hutch/netns"
	tests := []struct {
		name      string
		mode      container.NetworkMode
		netnsPath string
		disabled  bool
		want      *specs.LinuxNamespace
	}{
		{name: "default joins the given namespace", netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: joined}},
		{name: "bridge joins", mode: "bridge", netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: joined}},
		{name: "user-defined joins", mode: "mynet", netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: joined}},
		{name: "container joins the other's namespace", mode: "container:abc", netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: joined}},
		{name: "default without a path is new", want: &specs.LinuxNamespace{Type: specs.NetworkNamespace}},
		{name: "none is new and empty", mode: "none", netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace}},
		{name: "network disabled is new", disabled: true, netnsPath: joined, want: &specs.LinuxNamespace{Type: specs.NetworkNamespace}},
		{name: "host has none", mode: "host", netnsPath: joined},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.NetworkMode = tt.mode
			in.NetNSPath = tt.netnsPath
			in.Config.NetworkDisabled = tt.disabled
			s := build(t, in)
			ns, ok := namespace(s, specs.NetworkNamespace)
			switch {
			case tt.want == nil && ok:
				t.Errorf("host networking got %+v", ns)
			case tt.want != nil && (!ok || ns != *tt.want):
				t.Errorf("network namespace %+v (present %v), want %+v", ns, ok, *tt.want)
			}
			_, hasSysctl := s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"]
			if hasSysctl != (tt.want != nil) {
				t.Errorf("net sysctl present %v with network namespace %v", hasSysctl, tt.want != nil)
			}
		})
	}
}

func TestBuildHostname(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(*Input)
		spec   string // spec.Hostname
		env    string // HOSTNAME=
		uts    bool
		domain string
	}{
		{name: "short id", modify: func(*Input) {}, spec: "0123456789ab", env: "0123456789ab", uts: true},
		{name: "resolved", modify: func(in *Input) { in.Hostname = "web" }, spec: "web", env: "web", uts: true},
		{name: "config", modify: func(in *Input) { in.Config.Hostname = "cfg"; in.Config.Domainname = "example.org" }, spec: "cfg", env: "cfg", uts: true, domain: "example.org"},
		{name: "host network", modify: func(in *Input) { in.HostConfig.NetworkMode = "host" }, spec: host, env: host, uts: true},
		{name: "uts host", modify: func(in *Input) { in.HostConfig.UTSMode = "host" }, env: "0123456789ab"},
		{name: "uts host with a stored hostname", modify: func(in *Input) { in.HostConfig.UTSMode = "host"; in.Config.Hostname = "cfg" }, env: "cfg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.modify(&in)
			s := build(t, in)
			_, uts := namespace(s, specs.UTSNamespace)
			if s.Hostname != tt.spec || uts != tt.uts || s.Domainname != tt.domain || !slices.Contains(s.Process.Env, "HOSTNAME="+tt.env) {
				t.Errorf("hostname %q domain %q uts %v env %q", s.Hostname, s.Domainname, uts, s.Process.Env)
			}
		})
	}
}

func TestBuildNamespaces(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*container.HostConfig)
		absent []specs.LinuxNamespaceType
	}{
		{name: "default", modify: func(*container.HostConfig) {}},
		{name: "pid host", modify: func(hc *container.HostConfig) { hc.PidMode = "host" }, absent: []specs.LinuxNamespaceType{specs.PIDNamespace}},
		{name: "ipc host", modify: func(hc *container.HostConfig) { hc.IpcMode = "host" }, absent: []specs.LinuxNamespaceType{specs.IPCNamespace}},
		{name: "ipc none", modify: func(hc *container.HostConfig) { hc.IpcMode = "none" }},
		{name: "ipc shareable", modify: func(hc *container.HostConfig) { hc.IpcMode = "shareable" }},
		{name: "uts host", modify: func(hc *container.HostConfig) { hc.UTSMode = "host" }, absent: []specs.LinuxNamespaceType{specs.UTSNamespace}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.modify(in.HostConfig)
			s := build(t, in)
			for _, typ := range []specs.LinuxNamespaceType{specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.NetworkNamespace} {
				_, ok := namespace(s, typ)
				if ok == slices.Contains(tt.absent, typ) {
					t.Errorf("namespace %s present %v", typ, ok)
				}
			}
		})
	}
	t.Run("pid container", func(t *testing.T) {
		in := testInput(t)
		in.HostConfig.PidMode = "container:abc"
		in.PidNSPath = "/proc/42/ns/pid"
		if ns, ok := namespace(build(t, in), specs.PIDNamespace); !ok || ns.Path != "/proc/42/ns/pid" {
			t.Errorf("pid namespace %+v, %v", ns, ok)
		}
	})
	t.Run("ipc container and shareable", func(t *testing.T) {
		in := testInput(t)
		in.HostConfig.IpcMode = "container:abc"
		in.IpcNSPath, in.ShmPath = "/proc/42/ns/ipc", "/run/x/shm"
		s := build(t, in)
		if ns, ok := namespace(s, specs.IPCNamespace); !ok || ns.Path != "/proc/42/ns/ipc" {
			t.Errorf("ipc namespace %+v, %v", ns, ok)
		}
		for _, mode := range []container.IpcMode{"container:abc", "shareable"} {
			in.HostConfig.IpcMode = mode
			m, ok := findMount(build(t, in), "/dev/shm")
			if !ok || m.Type != "bind" || m.Source != "/run/x/shm" || !slices.Contains(m.Options, "nosuid") {
				t.Errorf("--ipc %s: /dev/shm %+v", mode, m)
			}
		}
	})
	t.Run("cgroup namespace modes", func(t *testing.T) {
		for mode, want := range map[container.CgroupnsMode]bool{"private": true, "host": false, "": cgroup2()} {
			in := testInput(t)
			in.HostConfig.CgroupnsMode = mode
			if _, ok := namespace(build(t, in), specs.CgroupNamespace); ok != want {
				t.Errorf("cgroupns mode %q: namespace %v, want %v", mode, ok, want)
			}
		}
	})
}

func TestBuildInit(t *testing.T) {
	in := testInput(t)
	in.InitPath = "/usr/libexec/hutch/init"
	in.HostConfig.Init = ptr(true)
	in.Config.Cmd = []string{"sleep", "1"}
	s := build(t, in)
	if want := []string{InitDestination, "--", "sleep", "1"}; !slices.Equal(s.Process.Args, want) {
		t.Errorf("args = %q, want %q", s.Process.Args, want)
	}
	m, ok := findMount(s, InitDestination)
	if !ok || m.Source != in.InitPath || m.Type != "bind" || !slices.Contains(m.Options, "ro") {
		t.Errorf("init mount %+v (present %v)", m, ok)
	}

	// No own pid namespace: nothing to replace, as in Docker.
	in.HostConfig.PidMode = "host"
	s = build(t, in)
	if _, ok := findMount(s, InitDestination); ok || s.Process.Args[0] != "sleep" {
		t.Errorf("--init with --pid host: args %q", s.Process.Args)
	}
	// Asked for and off.
	in = testInput(t)
	in.HostConfig.Init = ptr(false)
	if s := build(t, in); s.Process.Args[0] != "true" {
		t.Errorf("--init=false: args %q", s.Process.Args)
	}
}

func TestBuildSecurityOpt(t *testing.T) {
	tests := []struct {
		opts     []string
		nnp      bool
		warnings int
	}{
		{opts: []string{"no-new-privileges"}, nnp: true},
		{opts: []string{"no-new-privileges=true"}, nnp: true},
		{opts: []string{"no-new-privileges:true"}, nnp: true},
		{opts: []string{"no-new-privileges", "no-new-privileges=false"}},
		{opts: []string{"apparmor=unconfined", "label=disable", "label:type:svirt_t", "disable"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.opts, ","), func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.SecurityOpt = tt.opts
			s, w, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.NoNewPrivileges != tt.nnp || len(w) != tt.warnings {
				t.Errorf("no-new-privileges %v warnings %q", s.Process.NoNewPrivileges, w)
			}
		})
	}
}

func TestBuildPrivileged(t *testing.T) {
	in := testInput(t)
	in.HostConfig.Privileged = true
	in.HostConfig.CapDrop = []string{"ALL"}
	s := build(t, in)
	if c := s.Process.Capabilities; !slices.Equal(c.Bounding, hostCaps().available) || !slices.Contains(c.Effective, "CAP_SYS_ADMIN") {
		t.Errorf("capabilities = %+v", c)
	}
	if s.Linux.MaskedPaths != nil || s.Linux.ReadonlyPaths != nil {
		t.Errorf("masked %q readonly %q", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	for _, dst := range []string{"/sys", "/sys/fs/cgroup"} {
		if m, _ := findMount(s, dst); slices.Contains(m.Options, "ro") {
			t.Errorf("%s is read-only: %q", dst, m.Options)
		}
	}
	if d := s.Linux.Resources.Devices; len(d) != 1 || !d[0].Allow || d[0].Access != "rwm" {
		t.Errorf("device rules = %+v", d)
	}
}

func TestBuildPathOverrides(t *testing.T) {
	in := testInput(t)
	in.HostConfig.MaskedPaths = []string{}
	in.HostConfig.ReadonlyPaths = []string{"/proc/sys"}
	in.HostConfig.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "1024", "kernel.msgmax": "1"}
	in.HostConfig.Annotations = map[string]string{"a": "b"}
	s := build(t, in)
	if len(s.Linux.MaskedPaths) != 0 || !slices.Equal(s.Linux.ReadonlyPaths, []string{"/proc/sys"}) {
		t.Errorf("masked %q readonly %q", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	if s.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"] != "1024" || s.Linux.Sysctl["kernel.msgmax"] != "1" {
		t.Errorf("sysctl = %v", s.Linux.Sysctl)
	}
	if s.Annotations["a"] != "b" {
		t.Errorf("annotations = %v", s.Annotations)
	}
}

func TestBuildUlimits(t *testing.T) {
	type rl struct{ soft, hard uint64 }
	tests := []struct {
		name     string
		rootless bool
		defaults []*container.Ulimit
		ulimits  []*container.Ulimit
		want     map[string]rl
		err      string
	}{
		{name: "engine defaults", want: map[string]rl{"RLIMIT_NOFILE": {1048576, 1048576}, "RLIMIT_NPROC": {63000, 63000}}},
		{name: "request lowers nofile", ulimits: []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}},
			want: map[string]rl{"RLIMIT_NOFILE": {1024, 4096}, "RLIMIT_NPROC": {63000, 63000}}},
		{name: "daemon default then request", defaults: []*container.Ulimit{{Name: "nofile", Soft: 10, Hard: 10}, {Name: "core", Soft: 0, Hard: 0}},
			ulimits: []*container.Ulimit{{Name: "nofile", Soft: 20, Hard: 20}},
			want:    map[string]rl{"RLIMIT_NOFILE": {20, 20}, "RLIMIT_NPROC": {63000, 63000}, "RLIMIT_CORE": {0, 0}}},
		{name: "unlimited", rootless: true, ulimits: []*container.Ulimit{{Name: "core", Soft: -1, Hard: -1}},
			want: map[string]rl{"RLIMIT_NOFILE": {1048576, 1048576}, "RLIMIT_NPROC": {63000, 63000}, "RLIMIT_CORE": {math.MaxUint64, math.MaxUint64}}},
		{name: "real root may raise", ulimits: []*container.Ulimit{{Name: "nofile", Soft: 2000000, Hard: 2000000}},
			want: map[string]rl{"RLIMIT_NOFILE": {2000000, 2000000}, "RLIMIT_NPROC": {63000, 63000}}},
		{name: "rootless above the hard limit", rootless: true, ulimits: []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2000000}},
			err: "above the engine's own hard limit 1048576"},
		{name: "rootless memlock above", rootless: true, ulimits: []*container.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}},
			err: "hard limit unlimited is above"},
		{name: "soft above hard", ulimits: []*container.Ulimit{{Name: "nofile", Soft: 10, Hard: 5}}, err: "soft limit must be less than or equal to hard limit"},
		{name: "unknown", ulimits: []*container.Ulimit{{Name: "bogus", Soft: 1, Hard: 1}}, err: "invalid ulimit type: bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Rootless = tt.rootless
			in.DefaultUlimits = tt.defaults
			in.HostConfig.Ulimits = tt.ulimits
			s, _, err := Build(in)
			if tt.err != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want invalid argument containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]rl{}
			for _, r := range s.Process.Rlimits {
				got[r.Type] = rl{r.Soft, r.Hard}
			}
			if len(got) != len(tt.want) {
				t.Errorf("rlimits = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestBuildRlimitsFromHost(t *testing.T) {
	in := testInput(t)
	in.HostRlimits = nil
	want, ok := getrlimit("nofile")
	if !ok {
		t.Fatal("getrlimit(nofile) failed")
	}
	s := build(t, in)
	i := slices.IndexFunc(s.Process.Rlimits, func(r specs.POSIXRlimit) bool { return r.Type == "RLIMIT_NOFILE" })
	if i < 0 || s.Process.Rlimits[i].Soft != want.Soft || s.Process.Rlimits[i].Hard != want.Hard {
		t.Errorf("rlimits %+v, want NOFILE %+v", s.Process.Rlimits, want)
	}
}

func TestBuildResources(t *testing.T) {
	in := testInput(t)
	r := &in.HostConfig.Resources
	r.Memory = 256 << 20
	r.MemoryReservation = 128 << 20
	r.MemorySwap = -1
	r.NanoCPUs = 1_500_000_000
	r.CPUShares = 512
	r.CpusetCpus = "0-1"
	r.PidsLimit = ptr(int64(100))
	r.BlkioWeight = 300
	res := build(t, in).Linux.Resources
	switch {
	case res.Memory == nil || *res.Memory.Limit != 256<<20 || *res.Memory.Reservation != 128<<20 || *res.Memory.Swap != -1:
		t.Errorf("memory = %+v", res.Memory)
	case res.CPU == nil || *res.CPU.Period != 100000 || *res.CPU.Quota != 150000 || *res.CPU.Shares != 512 || res.CPU.Cpus != "0-1":
		t.Errorf("cpu = %+v", res.CPU)
	case res.Pids == nil || *res.Pids.Limit != 100:
		t.Errorf("pids = %+v", res.Pids)
	case res.BlockIO == nil || *res.BlockIO.Weight != 300:
		t.Errorf("blkio = %+v", res.BlockIO)
	}

	in = testInput(t)
	in.HostConfig.CPUPeriod = 50000
	in.HostConfig.CPUQuota = 25000
	in.HostConfig.PidsLimit = ptr(int64(0))
	res = build(t, in).Linux.Resources
	if *res.CPU.Period != 50000 || *res.CPU.Quota != 25000 || *res.Pids.Limit != -1 || res.Memory != nil {
		t.Errorf("cpu %+v pids %+v memory %+v", res.CPU, res.Pids, res.Memory)
	}
}

func TestBuildWritableCgroups(t *testing.T) {
	tests := []struct {
		opts       []string
		privileged bool
		writable   bool
	}{
		{},
		{privileged: true, writable: true},
		{opts: []string{"writable-cgroups"}, writable: true},
		{opts: []string{"writable-cgroups=false"}, privileged: true},
	}
	for _, tt := range tests {
		in := testInput(t)
		in.HostConfig.SecurityOpt = tt.opts
		in.HostConfig.Privileged = tt.privileged
		m, ok := findMount(build(t, in), "/sys/fs/cgroup")
		if !ok || slices.Contains(m.Options, "ro") == tt.writable {
			t.Errorf("opts %q privileged %v: cgroup mount %+v", tt.opts, tt.privileged, m)
		}
	}
}

// Rootless on cgroup v1 the container sees the host's hierarchy through one
// recursive read-only bind; elsewhere it is libcontainer's cgroup mount.
func TestBuildRootlessCgroupV1Mount(t *testing.T) {
	saved := cgroup2
	t.Cleanup(func() { cgroup2 = saved })
	for _, tt := range []struct {
		name         string
		rootless, v2 bool
		typ          string
		recursiveRO  bool
	}{
		{"rootless v1", true, false, "bind", true},
		{"rootless v2", true, true, "cgroup", false},
		{"root v1", false, false, "cgroup", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cgroup2 = func() bool { return tt.v2 }
			in := testInput(t)
			in.Rootless = tt.rootless
			m, ok := findMount(build(t, in), "/sys/fs/cgroup")
			if !ok || m.Type != tt.typ || slices.Contains(m.Options, "rro") != tt.recursiveRO {
				t.Errorf("cgroup mount %+v, want type %s, rro %v", m, tt.typ, tt.recursiveRO)
			}
		})
	}
}
