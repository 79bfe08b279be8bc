package preflight

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEnv is an unprivileged Env on fake files under root, with no probes
// and only the binaries in bins on "PATH".
func fakeEnv(root string, bins map[string]string) Env {
	return Env{
		UID: os.Geteuid(), GID: os.Getegid(), User: "alice",
		SubUIDFile: root + "/etc/subuid", SubGIDFile: root + "/etc/subgid",
		ProcSys: root + "/proc/sys", CgroupRoot: root + "/cgroup", SelfCgroup: root + "/self-cgroup",
		TunDevice: root + "/dev/net/tun", FuseDevice: root + "/dev/fuse",
		Kernel:     "6.1.0",
		RuntimeDir: root + "/xdg", RunUser: root + "/run/user", TmpDir: root + "/tmp", DataDir: root + "/data",
		LookPath: func(file string) (string, error) {
			if p, ok := bins[file]; ok {
				return p, nil
			}
			return "", exec.ErrNotFound
		},
	}
}

func TestCheckCgroup(t *testing.T) {
	uid := itoa(os.Geteuid())
	service := "user.slice/user-" + uid + ".slice/user@" + uid + ".service"
	tests := []struct {
		name    string
		files   map[string]string
		rootful bool
		status  Status
		detail  string
		fix     string
	}{
		{"v1 hybrid", map[string]string{"cgroup/memory/tasks": "", "cgroup/unified/cgroup.procs": ""}, false, Warning,
			"cgroup v1 (hybrid): resource limits (--memory, --cpus, --pids-limit) cannot be enforced rootless", "systemd.unified_cgroup_hierarchy=1"},
		{"v1 legacy", map[string]string{"cgroup/memory/tasks": ""}, false, Warning, "cgroup v1: resource limits", "systemd.unified_cgroup_hierarchy=1"},
		{"v1 rootful", map[string]string{"cgroup/memory/tasks": "", "cgroup/unified/cgroup.procs": ""}, true, OK,
			"cgroup v1 (hybrid): running as root", ""},
		{"v2 rootful", map[string]string{"cgroup/cgroup.controllers": "cpu memory pids"}, true, OK, "cgroup v2: running as root", ""},
		{"v2 delegated", map[string]string{"cgroup/cgroup.controllers": "cpuset cpu io memory pids",
			"cgroup/" + service + "/cgroup.controllers": "cpu io memory pids\n"}, false, OK, "cgroup v2, delegated: ", ""},
		{"v2 systemd default delegation", map[string]string{"cgroup/cgroup.controllers": "cpuset cpu io memory pids",
			"cgroup/" + service + "/cgroup.controllers": "memory pids\n"}, false, Warning,
			"has the controllers [memory pids], not cpu, so --cpus cannot be enforced", "Delegate=cpu cpuset io memory pids"},
		{"v2 nothing delegated", map[string]string{"cgroup/cgroup.controllers": "cpu memory pids",
			"cgroup/" + service + "/cgroup.controllers": ""}, false, Warning, "not memory, cpu, pids, so --memory, --cpus, --pids-limit", "delegate.conf"},
		{"v2 own cgroup in a CI container", map[string]string{"cgroup/cgroup.controllers": "cpu memory pids",
			"cgroup/ci/job/cgroup.controllers": "cpu memory pids", "self-cgroup": "0::/ci/job\n"}, false, OK, "/ci/job has [cpu memory pids]", ""},
		{"v2 no user service", map[string]string{"cgroup/cgroup.controllers": "cpu memory pids", "self-cgroup": "0::/\n"}, false, Warning,
			"no cgroup is delegated to uid", "loginctl enable-linger alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			env := fakeEnv(root, nil)
			env.Rootful = tt.rootful
			if tt.name == "v2 no user service" {
				// The root cgroup stands for one the user does not own.
				env.UID++
			}
			items := checkCgroup(context.Background(), &env)
			if len(items) != 1 {
				t.Fatalf("checkCgroup returned %d items", len(items))
			}
			it := items[0]
			if it.Status != tt.status || !strings.Contains(it.Detail, tt.detail) || !strings.Contains(it.Fix, tt.fix) || (tt.fix == "") != (it.Fix == "") {
				t.Errorf("checkCgroup = %v %q fix %q; want %v %q fix %q", it.Status, it.Detail, it.Fix, tt.status, tt.detail, tt.fix)
			}
		})
	}
}

func TestCheckIDMap(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "newuidmap")
	if err := os.WriteFile(plain, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		bins   map[string]string
		status Status
		detail string
		fix    string
	}{
		{"not on PATH", nil, Missing, "not found on PATH: hutch falls back to single-UID mode", "apt-get install uidmap"},
		{"neither setuid nor capable", map[string]string{"newuidmap": plain}, Missing,
			plain + ": neither setuid root nor with file capability cap_setuid+ep", "run as root: chmod u+s " + plain},
		{"gone after lookup", map[string]string{"newuidmap": dir + "/gone"}, Missing, "no such file", "chmod u+s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := fakeEnv(dir, tt.bins)
			it := idmapItem(&env, "newuidmap", 7)
			if it.Status != tt.status || !strings.Contains(it.Detail, tt.detail) || !strings.Contains(it.Fix, tt.fix) {
				t.Errorf("idmapItem = %v %q fix %q; want %v %q fix %q", it.Status, it.Detail, it.Fix, tt.status, tt.detail, tt.fix)
			}
		})
	}
	// The real helper, when this machine has it, passes by one of the two
	// ways; which one depends on the distribution.
	if p, err := exec.LookPath("newuidmap"); err == nil {
		env := fakeEnv(dir, map[string]string{"newuidmap": p})
		it := idmapItem(&env, "newuidmap", 7)
		if it.Status == OK && !strings.Contains(it.Detail, "setuid root") && !strings.Contains(it.Detail, "cap_setuid") {
			t.Errorf("OK newuidmap without saying why: %q", it.Detail)
		}
	}
}

func TestCheckTun(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, dev string)
		status Status
		fix    string
	}{
		{"usable", func(t *testing.T, dev string) { writeFiles(t, filepath.Dir(dev), map[string]string{"tun": ""}) }, OK, ""},
		{"missing", func(t *testing.T, dev string) {}, Missing, "modprobe tun"},
		{"a directory", func(t *testing.T, dev string) {
			if err := os.MkdirAll(dev, 0o755); err != nil {
				t.Fatal(err)
			}
		}, Missing, "chmod 666"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			env := fakeEnv(root, nil)
			tt.setup(t, env.TunDevice)
			it := checkTun(context.Background(), &env)[0]
			if it.Status != tt.status || !strings.Contains(it.Fix, tt.fix) {
				t.Errorf("checkTun = %v %q fix %q; want %v fix %q", it.Status, it.Detail, it.Fix, tt.status, tt.fix)
			}
			if it.Status == Missing && !strings.Contains(it.Detail, "containers get no network except --network host") {
				t.Errorf("checkTun detail %q does not say what is lost", it.Detail)
			}
		})
	}
}

func TestCheckStorageWithoutProbe(t *testing.T) {
	tests := []struct {
		name   string
		kernel string
		bins   map[string]string
		fuse   bool // /dev/fuse usable
		status Status
		detail string
		fix    string
	}{
		{"new kernel", "5.15.0-91-generic", nil, false, OK, "overlay (kernel 5.15.0-91-generic mounts overlay in a user namespace; not probed)", ""},
		{"old kernel, fuse-overlayfs", "5.10.0", map[string]string{"fuse-overlayfs": "/usr/bin/fuse-overlayfs"}, true, OK,
			"fuse-overlayfs (/usr/bin/fuse-overlayfs), since kernel 5.10.0 is older than 5.11", ""},
		{"old kernel, no fuse-overlayfs", "4.19.0", nil, true, Warning, "vfs, which copies every layer", "apt-get install fuse-overlayfs"},
		{"old kernel, no /dev/fuse", "4.19.0", map[string]string{"fuse-overlayfs": "/usr/bin/fuse-overlayfs"}, false, Warning,
			"does not exist", "modprobe fuse"},
		{"unknown kernel", "", nil, false, Warning, "since the kernel version is unknown", "fuse-overlayfs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			env := fakeEnv(root, tt.bins)
			env.Kernel = tt.kernel
			if tt.fuse {
				writeFiles(t, root, map[string]string{"dev/fuse": ""})
			}
			it := checkStorage(context.Background(), &env)[0]
			if it.Status != tt.status || !strings.Contains(it.Detail, tt.detail) || !strings.Contains(it.Fix, tt.fix) {
				t.Errorf("checkStorage = %v %q fix %q; want %v %q fix %q", it.Status, it.Detail, it.Fix, tt.status, tt.detail, tt.fix)
			}
		})
	}
}

// TestRunFake runs every check on fake files: a well set-up user on a
// cgroup v1 host without /dev/net/tun.
func TestRunFake(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"etc/subuid":                        "alice:100000:65536\n",
		"etc/subgid":                        "# none\n",
		"proc/sys/user/max_user_namespaces": "100\n",
		"cgroup/memory/tasks":               "",
		"usr/bin/slirp4netns":               "",
	})
	if err := os.Mkdir(root+"/xdg", 0o700); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(root, map[string]string{"slirp4netns": root + "/usr/bin/slirp4netns"})
	items := Run(context.Background(), env)
	want := []struct {
		name   string
		status Status
	}{
		{"newuidmap", Missing}, {"newgidmap", Missing}, {"subuid range", OK}, {"subgid range", Missing},
		{"user namespaces", OK}, {"/dev/net/tun", Missing}, {"slirp4netns", OK}, {"storage driver", OK},
		{"cgroup", Warning}, {"runtime dir", OK}, {"data dir", OK},
	}
	if len(items) != len(want) {
		t.Fatalf("Run returned %d items, want %d: %+v", len(items), len(want), items)
	}
	for i, w := range want {
		if items[i].Name != w.name || items[i].Status != w.status {
			t.Errorf("item %d = %q %v, want %q %v (%s)", i, items[i].Name, items[i].Status, w.name, w.status, items[i].Detail)
		}
	}
	if !SingleUID(items) {
		t.Error("SingleUID = false without newuidmap")
	}
	if err := Fatal(items); err != nil {
		t.Errorf("Fatal = %v, want nil", err)
	}
	env.RuntimeDir = root + "/missing"
	if err := Fatal(Run(context.Background(), env)); err == nil || !strings.HasPrefix(err.Error(), "runtime dir: XDG_RUNTIME_DIR: ") {
		t.Errorf("Fatal with a missing XDG_RUNTIME_DIR = %v", err)
	}
}

func TestRunRootful(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"cgroup/cgroup.controllers": "cpu memory pids"})
	env := fakeEnv(root, nil)
	env.Rootful = true
	items := Run(context.Background(), env)
	for _, it := range items {
		if it.Status == Missing {
			t.Errorf("rootful: %s is missing: %s", it.Name, it.Detail)
		}
		switch it.Check {
		case CheckIDMap, CheckSubID, CheckUserNS, CheckTun, CheckSlirp, CheckRuntimeDir:
			if !strings.HasPrefix(it.Detail, rootNotNeeded) {
				t.Errorf("rootful: %s says %q", it.Name, it.Detail)
			}
		}
	}
	if SingleUID(items) || Fatal(items) != nil {
		t.Errorf("rootful: SingleUID %v, Fatal %v", SingleUID(items), Fatal(items))
	}
}

// TestRunReal checks this machine as it is, as root or as an unprivileged
// user, and then as if the uid were not root (which runs every probe even
// as root).
func TestRunReal(t *testing.T) {
	for _, mode := range []string{"default", "rootless"} {
		t.Run(mode, func(t *testing.T) {
			env := DefaultEnv()
			if mode == "rootless" {
				env.Rootful = false
			}
			items := Run(context.Background(), env)
			var b strings.Builder
			if err := Write(&b, items); err != nil {
				t.Fatal(err)
			}
			t.Logf("uid %d, rootful %v:\n%s", env.UID, env.Rootful, b.String())
			seen := map[Check]bool{}
			for _, it := range items {
				seen[it.Check] = true
				if it.Name == "" || it.Detail == "" {
					t.Errorf("item without name or detail: %+v", it)
				}
				if it.Status == Missing && it.Fix == "" {
					t.Errorf("%s is missing without a fix: %s", it.Name, it.Detail)
				}
				if it.Status == OK && it.Fix != "" {
					t.Errorf("%s is ok with a fix: %s", it.Name, it.Fix)
				}
			}
			for _, c := range Checks {
				if !seen[c] {
					t.Errorf("no item for check %q", c)
				}
			}
			if err := Fatal(items); err != nil {
				if env.Rootful {
					t.Errorf("rootful Fatal = %v", err)
				}
				t.Logf("Fatal: %v", err)
			}
			if env.Rootful && SingleUID(items) {
				t.Error("rootful SingleUID = true")
			}
			for _, w := range Warnings(items) {
				t.Logf("warning: %s", w)
			}
		})
	}
}

// TestProbeOverlayCleansUp runs the real overlay probe and checks that it
// leaves nothing behind, whether the mount worked or not.
func TestProbeOverlayCleansUp(t *testing.T) {
	data := t.TempDir()
	env := DefaultEnv()
	env.LookPath = exec.LookPath
	env.DataDir = filepath.Join(data, "not", "yet", "hutch")
	dir, err := probeOverlay(context.Background(), &env)
	t.Logf("probe in %s: %v", dir, err)
	if dir != data && !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("probed in %s, want the nearest existing parent %s", dir, data)
	}
	left, rerr := os.ReadDir(data)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(left) != 0 {
		t.Errorf("probe left %v in %s", left, data)
	}
}

// TestProbesFail runs the real probes with false(1) standing in for the
// commands they start, so that they fail on every machine.
func TestProbesFail(t *testing.T) {
	falsePath, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"proc/sys/user/max_user_namespaces": "100", "dev/fuse": ""})
	env := fakeEnv(root, map[string]string{"true": falsePath, "mount": falsePath, "fuse-overlayfs": "/usr/bin/fuse-overlayfs"})
	env.Probe = true
	env.DataDir = t.TempDir()

	ns := checkUserNS(context.Background(), &env)[0]
	if ns.Status != Missing || !ns.Required || !strings.Contains(ns.Detail, "creating one failed: exit status 1") || !strings.Contains(ns.Fix, "seccomp=unconfined") {
		t.Errorf("checkUserNS = %v required %v %q fix %q", ns.Status, ns.Required, ns.Detail, ns.Fix)
	}
	st := checkStorage(context.Background(), &env)[0]
	if st.Status != OK || !strings.HasPrefix(st.Detail, "fuse-overlayfs (/usr/bin/fuse-overlayfs), since native overlay failed in a user namespace on kernel 6.1.0 in "+env.DataDir) {
		t.Errorf("checkStorage = %v %q", st.Status, st.Detail)
	}
	if left, _ := os.ReadDir(env.DataDir); len(left) != 0 {
		t.Errorf("failed probe left %v", left)
	}
}

func TestCheckDataDir(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		name   string
		mode   os.FileMode
		create bool
		want   Status
	}{
		{"absent", 0, false, OK},
		{"private", 0o700, true, OK},
		{"group readable", 0o750, true, Warning},
		{"world readable", 0o755, true, Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, tc.name, "hutch")
			if tc.create {
				os.MkdirAll(dir, 0o700)
				os.Chmod(dir, tc.mode)
			}
			items := checkDataDir(context.Background(), &Env{DataDir: dir})
			if len(items) != 1 || items[0].Status != tc.want {
				t.Fatalf("checkDataDir = %+v, want %v", items, tc.want)
			}
			if tc.want == Warning && items[0].Fix != "chmod 700 "+dir {
				t.Errorf("fix %q", items[0].Fix)
			}
		})
	}
}
