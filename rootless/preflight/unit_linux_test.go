package preflight

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// writeFiles creates files (path relative to dir → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUserNSSysctls(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		detail string // substring; "" means allowed
		fix    string // substring
	}{
		{"allowed", map[string]string{"user/max_user_namespaces": "63000\n"}, "", ""},
		{"allowed with Debian and Ubuntu switches", map[string]string{
			"user/max_user_namespaces":                     "63000\n",
			"kernel/unprivileged_userns_clone":             "1\n",
			"kernel/apparmor_restrict_unprivileged_userns": "0\n",
		}, "", ""},
		{"no user namespaces in the kernel", map[string]string{}, "the kernel has no user namespaces", "CONFIG_USER_NS=y"},
		{"max is 0", map[string]string{"user/max_user_namespaces": "0\n"},
			"user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"},
		{"garbage", map[string]string{"user/max_user_namespaces": "many\n"}, "invalid syntax", "readable"},
		{"Debian switch off", map[string]string{"user/max_user_namespaces": "63000", "kernel/unprivileged_userns_clone": "0\n"},
			"kernel.unprivileged_userns_clone is 0", "run as root: sysctl -w kernel.unprivileged_userns_clone=1"},
		{"Ubuntu AppArmor restriction", map[string]string{"user/max_user_namespaces": "63000", "kernel/apparmor_restrict_unprivileged_userns": "1"},
			"kernel.apparmor_restrict_unprivileged_userns is 1", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give hutch an AppArmor profile"},
		{"max checked first", map[string]string{"user/max_user_namespaces": "0", "kernel/unprivileged_userns_clone": "0"},
			"user.max_user_namespaces is 0", "max_user_namespaces=15000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			detail, fix := userNSSysctls(dir)
			if tt.detail == "" {
				if detail != "" || fix != "" {
					t.Fatalf("userNSSysctls = %q, %q; want allowed", detail, fix)
				}
				return
			}
			if !strings.Contains(detail, tt.detail) || !strings.Contains(fix, tt.fix) {
				t.Errorf("userNSSysctls = %q, %q; want %q, %q", detail, fix, tt.detail, tt.fix)
			}
		})
	}
}

func TestKernelAtLeast(t *testing.T) {
	tests := []struct {
		release string
		want    bool
	}{
		{"5.11.0", true}, {"5.10.209-1", false}, {"6.18.44-fc-v669", true}, {"4.19.0-26-amd64", false},
		{"5.11", true}, {"5.11-rc1", true}, {"5", false}, {"", false}, {"x.y", false}, {"10.0.1", true},
	}
	for _, tt := range tests {
		if got := kernelAtLeast(tt.release, 5, 11); got != tt.want {
			t.Errorf("kernelAtLeast(%q, 5, 11) = %v, want %v", tt.release, got, tt.want)
		}
	}
}

func fileCaps(magic uint32, words ...uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, magic)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func TestParseFileCaps(t *testing.T) {
	const setuid = 1 << unix.CAP_SETUID
	tests := []struct {
		name    string
		data    []byte
		perm    uint64
		eff     bool
		wantErr bool
	}{
		{"v2 cap_setuid+ep", fileCaps(vfsCapRevision2|vfsCapEffective, setuid, 0, 0, 0), setuid, true, false},
		{"v2 cap_setuid+p", fileCaps(vfsCapRevision2, setuid, 0, 0, 0), setuid, false, false},
		{"v2 high word", fileCaps(vfsCapRevision2|vfsCapEffective, 0, 0, 1, 0), 1 << 32, true, false},
		{"v1", fileCaps(vfsCapRevision1|vfsCapEffective, setuid, 0), setuid, true, false},
		{"v3 host root", fileCaps(vfsCapRevision3|vfsCapEffective, setuid, 0, 0, 0, 0), setuid, true, false},
		{"v3 namespaced", fileCaps(vfsCapRevision3|vfsCapEffective, setuid, 0, 0, 0, 100000), 0, false, false},
		{"short", []byte{1, 2}, 0, false, true},
		{"wrong size", fileCaps(vfsCapRevision2, setuid), 0, false, true},
		{"unknown revision", fileCaps(0x07000000, 0, 0, 0, 0), 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perm, eff, err := parseFileCaps(tt.data)
			if (err != nil) != tt.wantErr || perm != tt.perm || eff != tt.eff {
				t.Errorf("parseFileCaps = %#x, %v, %v; want %#x, %v, error %v", perm, eff, err, tt.perm, tt.eff, tt.wantErr)
			}
		})
	}
}

func TestRootDetection(t *testing.T) {
	if !initialUserNS("         0          0 4294967295\n") {
		t.Error("identity map of everything is the initial namespace")
	}
	for _, m := range []string{"0 1000 1\n", "0 1000 1\n1 100000 65536\n", "0 0 65536\n", ""} {
		if initialUserNS(m) {
			t.Errorf("initialUserNS(%q) = true", m)
		}
	}
	status := "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n"
	if !hasCap(status, unix.CAP_SYS_ADMIN) {
		t.Error("full CapEff lacks CAP_SYS_ADMIN")
	}
	if hasCap("CapEff:\t00000000a80425fb\n", unix.CAP_SYS_ADMIN) {
		t.Error("docker's default CapEff has CAP_SYS_ADMIN")
	}
	if hasCap("CapInh:\tffffffffffffffff\n", unix.CAP_SYS_ADMIN) {
		t.Error("CapInh was read as CapEff")
	}
}

func TestResolveRuntimeDir(t *testing.T) {
	uid := os.Geteuid()
	mkdir := func(t *testing.T, p string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		// setup returns XDG_RUNTIME_DIR and the uid to resolve for.
		setup   func(t *testing.T, root string) (xdg string, uid int)
		dir     string // relative to root; "" when err
		source  string
		errIs   error
		fixPart string
	}{
		{"xdg", func(t *testing.T, root string) (string, int) {
			return mkdir(t, root+"/xdg", 0o700), uid
		}, "xdg", SourceXDG, nil, ""},
		{"xdg relative", func(t *testing.T, root string) (string, int) { return "run/me", uid },
			"", SourceXDG, errdefs.ErrInvalidArgument, "absolute"},
		{"xdg missing", func(t *testing.T, root string) (string, int) { return root + "/nope", uid },
			"", SourceXDG, errdefs.ErrNotFound, "mkdir -m 700"},
		{"xdg mode 0755", func(t *testing.T, root string) (string, int) { return mkdir(t, root+"/xdg", 0o755), uid },
			"", SourceXDG, errdefs.ErrFailedPrecondition, "chmod 700"},
		{"xdg not ours", func(t *testing.T, root string) (string, int) { return mkdir(t, root+"/xdg", 0o700), uid + 1 },
			"", SourceXDG, errdefs.ErrFailedPrecondition, "unset XDG_RUNTIME_DIR"},
		{"xdg is a file", func(t *testing.T, root string) (string, int) {
			writeFiles(t, root, map[string]string{"f": ""})
			return root + "/f", uid
		}, "", SourceXDG, errdefs.ErrFailedPrecondition, "unset XDG_RUNTIME_DIR"},
		{"run/user", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "run/user", itoa(uid)), 0o700)
			return "", uid
		}, "run/user/" + itoa(uid), SourceRunUser, nil, ""},
		{"run/user not ours falls back to tmp", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "run/user", itoa(uid+1)), 0o700)
			return "", uid + 1
		}, "tmp/hutch-" + itoa(uid+1), SourceTmpDir, nil, ""},
		{"run/user too open falls back to tmp", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "run/user", itoa(uid)), 0o755)
			return "", uid
		}, "tmp/hutch-" + itoa(uid), SourceTmpDir, nil, ""},
		{"tmp existing and ours", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "tmp/hutch-"+itoa(uid)), 0o700)
			return "", uid
		}, "tmp/hutch-" + itoa(uid), SourceTmpDir, nil, ""},
		{"tmp planted by another user", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "tmp/hutch-"+itoa(uid+1)), 0o700)
			return "", uid + 1
		}, "", SourceTmpDir, errdefs.ErrFailedPrecondition, "rm -rf"},
		{"tmp is a symlink", func(t *testing.T, root string) (string, int) {
			target := mkdir(t, root+"/elsewhere", 0o700)
			mkdir(t, root+"/tmp", 0o755)
			if err := os.Symlink(target, filepath.Join(root, "tmp/hutch-"+itoa(uid))); err != nil {
				t.Fatal(err)
			}
			return "", uid
		}, "", SourceTmpDir, errdefs.ErrFailedPrecondition, "rm -rf"},
		{"tmp too open", func(t *testing.T, root string) (string, int) {
			mkdir(t, filepath.Join(root, "tmp/hutch-"+itoa(uid)), 0o777)
			return "", uid
		}, "", SourceTmpDir, errdefs.ErrFailedPrecondition, "chmod 700"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			xdg, id := tt.setup(t, root)
			env := Env{UID: id, RuntimeDir: xdg, RunUser: root + "/run/user", TmpDir: root + "/tmp"}
			dir, source, fix, err := resolveRuntimeDir(env)
			if source != tt.source {
				t.Errorf("source = %q, want %q", source, tt.source)
			}
			if tt.errIs != nil {
				if !errors.Is(err, tt.errIs) || dir != "" || !strings.Contains(fix, tt.fixPart) {
					t.Errorf("resolveRuntimeDir = %q, %v, fix %q; want error %v, fix containing %q", dir, err, fix, tt.errIs, tt.fixPart)
				}
				if err != nil && strings.Contains(err.Error(), tt.errIs.Error()) {
					t.Errorf("error %q repeats its class's text", err)
				}
				return
			}
			if err != nil || dir != filepath.Join(root, tt.dir) {
				t.Errorf("resolveRuntimeDir = %q, %v; want %q", dir, err, filepath.Join(root, tt.dir))
			}
			if d, s, err := ResolveRuntimeDir(env); d != dir || s != source || err != nil {
				t.Errorf("ResolveRuntimeDir = %q, %q, %v; want what resolveRuntimeDir said", d, s, err)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func FuzzParseFileCaps(f *testing.F) {
	f.Add(fileCaps(vfsCapRevision2|vfsCapEffective, 1<<unix.CAP_SETUID, 0, 0, 0))
	f.Add(fileCaps(vfsCapRevision3, 0, 0, 0, 0, 5))
	f.Fuzz(func(t *testing.T, b []byte) {
		perm, eff, err := parseFileCaps(b)
		if err != nil && (perm != 0 || eff) {
			t.Fatalf("error %v with caps %#x, %v", err, perm, eff)
		}
	})
}
