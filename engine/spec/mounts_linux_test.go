package spec

import (
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestBuildDefaultMounts(t *testing.T) {
	in := testInput(t)
	s := build(t, in)
	want := []string{"/proc", "/dev", "/dev/pts", "/sys", "/sys/fs/cgroup", "/dev/mqueue", "/dev/shm"}
	var got []string
	for _, m := range s.Mounts {
		got = append(got, m.Destination)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("mounts = %q, want %q", got, want)
	}
	shm, _ := findMount(s, "/dev/shm")
	if !slices.Contains(shm.Options, "size=67108864") || shm.Type != "tmpfs" {
		t.Errorf("/dev/shm = %+v", shm)
	}
	if sys, _ := findMount(s, "/sys"); sys.Type != "sysfs" || !slices.Contains(sys.Options, "ro") {
		t.Errorf("/sys = %+v", sys)
	}
}

func TestBuildBinds(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"data/f": "x", "conf.txt": "y"})
	data, conf := filepath.Join(host, "data"), filepath.Join(host, "conf.txt")
	missing := filepath.Join(host, "missing")
	vol := filepath.Join(host, "volumes", "vol", "_data")
	tests := []struct {
		name    string
		binds   []string
		volumes map[string]string
		want    []specs.Mount
		err     error
		text    string
	}{
		{name: "rw dir", binds: []string{data + ":/data"},
			want: []specs.Mount{{Destination: "/data", Type: "bind", Source: data, Options: []string{"rbind", "rprivate"}}}},
		{name: "ro file", binds: []string{conf + ":/etc/app.conf:ro"},
			want: []specs.Mount{{Destination: "/etc/app.conf", Type: "bind", Source: conf, Options: []string{"rbind", "ro", "rprivate"}}}},
		{name: "selinux label ignored, propagation kept", binds: []string{data + ":/data:Z,rslave"},
			want: []specs.Mount{{Destination: "/data", Type: "bind", Source: data, Options: []string{"rbind", "rslave"}}}},
		{name: "parents first", binds: []string{data + ":/a/b/c", conf + ":/a/x", data + ":/a"},
			want: []specs.Mount{
				{Destination: "/a", Type: "bind", Source: data, Options: []string{"rbind", "rprivate"}},
				{Destination: "/a/x", Type: "bind", Source: conf, Options: []string{"rbind", "rprivate"}},
				{Destination: "/a/b/c", Type: "bind", Source: data, Options: []string{"rbind", "rprivate"}},
			}},
		{name: "missing source", binds: []string{missing + ":/m"}, err: errdefs.ErrInvalidArgument,
			text: "invalid volume specification: '" + missing + ":/m': invalid mount config for type \"bind\": bind source path does not exist: " + missing},
		{name: "named volume", binds: []string{"vol:/v"}, volumes: map[string]string{"/v": vol},
			want: []specs.Mount{{Destination: "/v", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate"}}}},
		{name: "named volume ro", binds: []string{"vol:/v:ro,nocopy"}, volumes: map[string]string{"/v": vol},
			want: []specs.Mount{{Destination: "/v", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate", "ro"}}}},
		{name: "volume not made", binds: []string{"vol:/v"}, err: errdefs.ErrInvalidArgument, text: "no volume was made for it"},
		{name: "relative source is a volume name", binds: []string{"rel/dir:/v"}, err: errdefs.ErrInvalidArgument, text: "no volume was made for it"},
		{name: "anonymous volume", binds: []string{"/v"}, volumes: map[string]string{"/v": vol},
			want: []specs.Mount{{Destination: "/v", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate"}}}},
		{name: "image volume where no mount is", volumes: map[string]string{"/anon": vol},
			want: []specs.Mount{{Destination: "/anon", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate"}}}},
		{name: "image volume under a bind", binds: []string{data + ":/anon"}, volumes: map[string]string{"/anon": vol},
			want: []specs.Mount{{Destination: "/anon", Type: "bind", Source: data, Options: []string{"rbind", "rprivate"}}}},
		{name: "duplicate", binds: []string{data + ":/d", conf + ":/d/"}, err: errdefs.ErrInvalidArgument, text: "Duplicate mount point: /d"},
		{name: "bad mode", binds: []string{data + ":/d:bogus"}, err: errdefs.ErrInvalidArgument, text: "invalid mode"},
		{name: "root target", binds: []string{data + ":/"}, err: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.Binds = tt.binds
			in.Volumes = tt.volumes
			s, _, err := Build(in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(fmtErr(err), tt.text) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.err, tt.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			user := s.Mounts[len(s.Mounts)-len(tt.want):]
			for i, w := range tt.want {
				g := user[i]
				if g.Destination != w.Destination || g.Source != w.Source || g.Type != w.Type || !slices.Equal(g.Options, w.Options) {
					t.Errorf("mount %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestBuildMountsField(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"d/f": ""})
	src := filepath.Join(host, "d")
	vol := filepath.Join(host, "volumes", "v", "_data")
	tests := []struct {
		name string
		m    mount.Mount
		want specs.Mount
		err  error
		text string
	}{
		{name: "bind", m: mount.Mount{Type: "bind", Source: src, Target: "/d"},
			want: specs.Mount{Destination: "/d", Type: "bind", Source: src, Options: []string{"rbind", "rprivate"}}},
		{name: "bind ro non-recursive", m: mount.Mount{Type: "bind", Source: src, Target: "/d", ReadOnly: true, BindOptions: &mount.BindOptions{NonRecursive: true}},
			want: specs.Mount{Destination: "/d", Type: "bind", Source: src, Options: []string{"bind", "ro", "rprivate"}}},
		{name: "bind rro", m: mount.Mount{Type: "bind", Source: src, Target: "/d", ReadOnly: true, BindOptions: &mount.BindOptions{ReadOnlyForceRecursive: true}},
			want: specs.Mount{Destination: "/d", Type: "bind", Source: src, Options: []string{"rbind", "rro", "rprivate"}}},
		{name: "tmpfs", m: mount.Mount{Type: "tmpfs", Target: "/t", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 1 << 20, Mode: 0o700, Options: [][]string{{"exec"}}}},
			want: specs.Mount{Destination: "/t", Type: "tmpfs", Source: "tmpfs", Options: []string{"exec", "nosuid", "nodev", "rprivate", "mode=700", "size=1m"}}},
		{name: "missing bind source", m: mount.Mount{Type: "bind", Source: filepath.Join(host, "no"), Target: "/d"}, err: errdefs.ErrInvalidArgument,
			text: `invalid mount config for type "bind": bind source path does not exist: ` + filepath.Join(host, "no")},
		{name: "relative bind source", m: mount.Mount{Type: "bind", Source: "d", Target: "/d"}, err: errdefs.ErrInvalidArgument, text: "must be absolute"},
		{name: "relative target", m: mount.Mount{Type: "bind", Source: src, Target: "d"}, err: errdefs.ErrInvalidArgument, text: "must be absolute"},
		{name: "tmpfs with source", m: mount.Mount{Type: "tmpfs", Source: "x", Target: "/t"}, err: errdefs.ErrInvalidArgument, text: "field Source must not be specified"},
		{name: "bind options on tmpfs", m: mount.Mount{Type: "tmpfs", Target: "/t", BindOptions: &mount.BindOptions{}}, err: errdefs.ErrInvalidArgument, text: "BindOptions"},
		{name: "bad propagation", m: mount.Mount{Type: "bind", Source: src, Target: "/d", BindOptions: &mount.BindOptions{Propagation: "weird"}}, err: errdefs.ErrInvalidArgument},
		{name: "ro conflict", m: mount.Mount{Type: "bind", Source: src, Target: "/d", ReadOnly: true, BindOptions: &mount.BindOptions{ReadOnlyNonRecursive: true, ReadOnlyForceRecursive: true}}, err: errdefs.ErrInvalidArgument},
		{name: "volume", m: mount.Mount{Type: "volume", Source: "v", Target: "/v"},
			want: specs.Mount{Destination: "/v", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate"}}},
		{name: "volume ro", m: mount.Mount{Type: "volume", Source: "v", Target: "/v", ReadOnly: true},
			want: specs.Mount{Destination: "/v", Type: "bind", Source: vol, Options: []string{"rbind", "rprivate", "ro"}}},
		{name: "volume subpath unprepared", m: mount.Mount{Type: "volume", Source: "v", Target: "/v", VolumeOptions: &mount.VolumeOptions{Subpath: "x"}}, err: errdefs.ErrInvalidArgument, text: "not prepared"},
		{name: "volume subpath", m: mount.Mount{Type: "volume", Source: "v", Target: "/s", ReadOnly: true, VolumeOptions: &mount.VolumeOptions{Subpath: "x"}},
			want: specs.Mount{Destination: "/s", Type: "bind", Source: "/staged/x", Options: []string{"rbind", "rprivate", "ro"}}},
		{name: "image unprepared", m: mount.Mount{Type: "image", Source: "busybox", Target: "/x"}, err: errdefs.ErrInvalidArgument, text: "not prepared"},
		{name: "image without source", m: mount.Mount{Type: "image", Target: "/i"}, err: errdefs.ErrInvalidArgument, text: `invalid mount config for type "image": field Source must not be empty`},
		{name: "image options on a bind", m: mount.Mount{Type: "bind", Source: src, Target: "/d", ImageOptions: &mount.ImageOptions{}}, err: errdefs.ErrInvalidArgument, text: "field ImageOptions must not be specified"},
		// Read-only even when the request does not say so.
		{name: "image", m: mount.Mount{Type: "image", Source: "busybox", Target: "/i", ImageOptions: &mount.ImageOptions{Subpath: "bin"}},
			want: specs.Mount{Destination: "/i", Type: "bind", Source: "/staged/image", Options: []string{"rbind", "ro", "rprivate"}}},
		{name: "npipe", m: mount.Mount{Type: "npipe", Source: "x", Target: "/p"}, err: errdefs.ErrInvalidArgument, text: "mount type unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig.Mounts = []mount.Mount{tt.m}
			in.Volumes = map[string]string{"/v": vol}
			in.Subpaths = map[string]string{"/s": "/staged/x"}
			in.Images = map[string]string{"/i": "/staged/image"}
			s, _, err := Build(in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(fmtErr(err), tt.text) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.err, tt.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, ok := findMount(s, tt.want.Destination)
			if !ok || g.Source != tt.want.Source || g.Type != tt.want.Type || !slices.Equal(g.Options, tt.want.Options) {
				t.Errorf("mount = %+v, want %+v", g, tt.want)
			}
		})
	}
}

// The mount points --volumes-from copied go where the container's own
// mounts do not, read-only as recorded.
func TestBuildInherited(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"d/f": "", "own/f": ""})
	vol := filepath.Join(host, "volumes", "v", "_data")
	in := testInput(t)
	in.Inherited = []container.MountPoint{
		{Type: "volume", Name: "v", Source: vol, Destination: "/v", RW: false},
		{Type: "bind", Source: filepath.Join(host, "d"), Destination: "/d", RW: true, Propagation: "rslave"},
		{Type: "bind", Source: filepath.Join(host, "d"), Destination: "/own", RW: true},
		{Type: "bind", Source: filepath.Join(host, "gone"), Destination: "/gone", RW: true},
	}
	in.HostConfig.Binds = []string{filepath.Join(host, "own") + ":/own:ro"}
	if _, _, err := Build(in); err == nil || !strings.Contains(fmtErr(err), "--volumes-from bind at /gone") {
		t.Fatalf("a copied bind whose source is gone: %v", err)
	}
	in.Inherited = in.Inherited[:3]
	s := build(t, in)
	for _, want := range []specs.Mount{
		{Destination: "/v", Source: vol, Options: []string{"rbind", "rprivate", "ro"}},
		{Destination: "/d", Source: filepath.Join(host, "d"), Options: []string{"rbind", "rslave"}},
		{Destination: "/own", Source: filepath.Join(host, "own"), Options: []string{"rbind", "ro", "rprivate"}},
	} {
		g, ok := findMount(s, want.Destination)
		if !ok || g.Source != want.Source || g.Type != "bind" || !slices.Equal(g.Options, want.Options) {
			t.Errorf("mount = %+v, want %+v", g, want)
		}
	}
}

// --device binds the host's node (a user namespace cannot make one) and
// allows it in the device cgroup, with the access asked for.
func TestBuildDevices(t *testing.T) {
	in := testInput(t)
	in.HostConfig.Devices = []container.DeviceMapping{
		{PathOnHost: "/dev/null", PathInContainer: "/dev/mynull", CgroupPermissions: "r"},
		{PathOnHost: "/dev/zero"},
	}
	s := build(t, in)
	for _, want := range []specs.Mount{
		{Destination: "/dev/mynull", Source: "/dev/null", Options: []string{"bind", "rprivate"}},
		{Destination: "/dev/zero", Source: "/dev/zero", Options: []string{"bind", "rprivate"}},
	} {
		g, ok := findMount(s, want.Destination)
		if !ok || g.Source != want.Source || g.Type != "bind" || !slices.Equal(g.Options, want.Options) {
			t.Errorf("mount = %+v, want %+v", g, want)
		}
	}
	rules := s.Linux.Resources.Devices
	for _, want := range []specs.LinuxDeviceCgroup{
		{Allow: true, Type: "c", Major: ptr(int64(1)), Minor: ptr(int64(3)), Access: "r"},
		{Allow: true, Type: "c", Major: ptr(int64(1)), Minor: ptr(int64(5)), Access: "rwm"},
	} {
		if !slices.ContainsFunc(rules[len(rules)-2:], func(r specs.LinuxDeviceCgroup) bool {
			return r.Allow && r.Type == want.Type && *r.Major == *want.Major && *r.Minor == *want.Minor && r.Access == want.Access
		}) {
			t.Errorf("no rule %v %d:%d %s after the defaults in %+v", want.Type, *want.Major, *want.Minor, want.Access, rules)
		}
	}
}

func TestBuildSharedPropagation(t *testing.T) {
	in := testInput(t)
	in.HostConfig.Binds = []string{t.TempDir() + ":/s:rshared"}
	if s := build(t, in); s.Linux.RootfsPropagation != "shared" {
		t.Errorf("rootfs propagation = %q", s.Linux.RootfsPropagation)
	}
	in.HostConfig.Binds = []string{t.TempDir() + ":/s:slave"}
	if s := build(t, in); s.Linux.RootfsPropagation != "rslave" {
		t.Errorf("rootfs propagation = %q", s.Linux.RootfsPropagation)
	}
}

func TestBuildTmpfs(t *testing.T) {
	in := testInput(t)
	in.HostConfig.Tmpfs = map[string]string{"/run": "", "/tmp": "exec,size=10m,mode=1777", "/dev/shm": "size=1g"}
	s := build(t, in)
	for dst, want := range map[string][]string{
		"/run":     {"noexec", "nosuid", "nodev", "rprivate"},
		"/tmp":     {"exec", "nosuid", "nodev", "rprivate", "size=10m", "mode=1777"},
		"/dev/shm": {"noexec", "nosuid", "nodev", "rprivate", "size=1g"},
	} {
		m, ok := findMount(s, dst)
		if !ok || m.Type != "tmpfs" || !slices.Equal(m.Options, want) {
			t.Errorf("%s = %+v, want options %q", dst, m, want)
		}
	}
	n := 0
	for _, m := range s.Mounts {
		if m.Destination == "/dev/shm" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d mounts at /dev/shm: the user's must replace the default", n)
	}

	in.HostConfig.Tmpfs = map[string]string{"relative": ""}
	if _, _, err := Build(in); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("relative tmpfs: err = %v", err)
	}
}

func TestBuildUserDevReplacesDevDefaults(t *testing.T) {
	in := testInput(t)
	in.HostConfig.Tmpfs = map[string]string{"/dev": ""}
	s := build(t, in)
	for _, m := range s.Mounts {
		if strings.HasPrefix(m.Destination, "/dev/") {
			t.Errorf("default %s kept under a user /dev", m.Destination)
		}
	}
}

func TestBuildEtcFiles(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"hosts": "", "hostname": "", "resolv.conf": "", "mine": ""})
	files := EtcFiles{Hosts: filepath.Join(host, "hosts"), Hostname: filepath.Join(host, "hostname"), ResolvConf: filepath.Join(host, "resolv.conf")}

	in := testInput(t)
	in.EtcFiles = files
	s := build(t, in)
	for dst, src := range map[string]string{"/etc/hosts": files.Hosts, "/etc/hostname": files.Hostname, "/etc/resolv.conf": files.ResolvConf} {
		m, ok := findMount(s, dst)
		if !ok || m.Source != src || m.Type != "bind" || !slices.Equal(m.Options, []string{"rbind", "rprivate"}) {
			t.Errorf("%s = %+v", dst, m)
		}
	}

	// A user bind at the same place wins; a read-only rootfs makes them ro.
	in = testInput(t)
	in.EtcFiles = files
	in.HostConfig.ReadonlyRootfs = true
	in.HostConfig.Binds = []string{filepath.Join(host, "mine") + ":/etc/hosts:ro"}
	s = build(t, in)
	if m, _ := findMount(s, "/etc/hosts"); m.Source != filepath.Join(host, "mine") {
		t.Errorf("/etc/hosts = %+v", m)
	}
	if m, _ := findMount(s, "/etc/resolv.conf"); !slices.Equal(m.Options, []string{"rbind", "ro", "rprivate"}) {
		t.Errorf("/etc/resolv.conf on a read-only rootfs = %+v", m)
	}

	in = testInput(t)
	in.EtcFiles = EtcFiles{Hosts: "relative/hosts"}
	if _, _, err := Build(in); err == nil {
		t.Error("relative etc file accepted")
	}
}

func TestBuildReadonlyRootfs(t *testing.T) {
	in := testInput(t)
	in.HostConfig.ReadonlyRootfs = true
	in.HostConfig.Tmpfs = map[string]string{"/run": ""}
	s := build(t, in)
	if !s.Root.Readonly {
		t.Error("root is writable")
	}
	for _, m := range s.Mounts {
		ro := slices.Contains(m.Options, "ro")
		wantRO := !slices.Contains(writableWhenReadonly, m.Destination) && m.Destination != "/run"
		if ro != wantRO {
			t.Errorf("%s read-only %v, want %v", m.Destination, ro, wantRO)
		}
	}
}

func TestBuildShm(t *testing.T) {
	tests := []struct {
		name     string
		hc       container.HostConfig
		rootless bool
		want     *specs.Mount
		mqueue   string // type of /dev/mqueue
	}{
		{name: "size", hc: container.HostConfig{ShmSize: 1 << 30},
			want: &specs.Mount{Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=1073741824"}}, mqueue: "mqueue"},
		{name: "ipc none has no shm", hc: container.HostConfig{IpcMode: "none"}, mqueue: "mqueue"},
		{name: "ipc host binds the host's", hc: container.HostConfig{IpcMode: "host"},
			want: &specs.Mount{Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rprivate"}}, mqueue: "mqueue"},
		{name: "ipc host rootless binds mqueue too", hc: container.HostConfig{IpcMode: "host"}, rootless: true,
			want: &specs.Mount{Type: "bind", Source: "/dev/shm", Options: []string{"rbind", "rprivate"}}, mqueue: "bind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.HostConfig = &tt.hc
			in.Rootless = tt.rootless
			s := build(t, in)
			m, ok := findMount(s, "/dev/shm")
			switch {
			case tt.want == nil && ok:
				t.Errorf("/dev/shm = %+v", m)
			case tt.want != nil && (!ok || m.Type != tt.want.Type || m.Source != tt.want.Source || !slices.Equal(m.Options, tt.want.Options)):
				t.Errorf("/dev/shm = %+v, want %+v", m, *tt.want)
			}
			if mq, _ := findMount(s, "/dev/mqueue"); mq.Type != tt.mqueue {
				t.Errorf("/dev/mqueue = %+v", mq)
			}
		})
	}
}

func TestParseDeviceRule(t *testing.T) {
	for raw, want := range map[string]string{
		"c 1:3 rwm":       "c 1:3 rwm",
		"b *:* r":         "b *:* r",
		"a 7:* mw":        "a 7:* mw",
		"c 1:3":           "",
		"x 1:3 rwm":       "",
		"c 1-3 rwm":       "",
		"c 1:3 rwx":       "",
		"c -1:3 rwm":      "",
		"c 1:3 rwm extra": "",
	} {
		r, err := ParseDeviceRule(raw)
		if want == "" {
			if err == nil || !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "invalid device cgroup format") {
				t.Errorf("%q: %+v, %v; want an error", raw, r, err)
			}
			continue
		}
		if err != nil || deviceRuleString(r) != want {
			t.Errorf("%q: %s, %v", raw, deviceRuleString(r), err)
		}
	}
}

func deviceRuleString(r specs.LinuxDeviceCgroup) string {
	n := func(p *int64) string {
		if p == nil {
			return "*"
		}
		return strconv.FormatInt(*p, 10)
	}
	return r.Type + " " + n(r.Major) + ":" + n(r.Minor) + " " + r.Access
}

func FuzzParseDeviceRule(f *testing.F) {
	for _, s := range []string{"c 1:3 rwm", "b *:* r", "a 7:* m", "c 1:3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := ParseDeviceRule(raw)
		if err != nil {
			return
		}
		// What it accepts reads back the same.
		if again, err := ParseDeviceRule(deviceRuleString(r)); err != nil || deviceRuleString(again) != deviceRuleString(r) {
			t.Errorf("%q gave %s, which reads as %s, %v", raw, deviceRuleString(r), deviceRuleString(again), err)
		}
	})
}
