package preflight

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

var (
	okItem   = Item{Check: CheckIDMap, Name: "newuidmap", Detail: "/usr/bin/newuidmap (setuid root)"}
	subMiss  = Item{Check: CheckSubID, Name: "subuid range", Status: Missing, Detail: "no range for alice (uid 1000) in /etc/subuid", Fix: "run as root: usermod --add-subuids 100000-165535 alice"}
	nsMiss   = Item{Check: CheckUserNS, Name: "user namespaces", Status: Missing, Required: true, Detail: "kernel.unprivileged_userns_clone is 0", Fix: "run as root: sysctl -w kernel.unprivileged_userns_clone=1"}
	dirMiss  = Item{Check: CheckRuntimeDir, Name: "runtime dir", Status: Missing, Required: true, Detail: "XDG_RUNTIME_DIR: /x does not exist", Fix: "mkdir -m 700 /x"}
	cgWarn   = Item{Check: CheckCgroup, Name: "cgroup", Status: Warning, Detail: "cgroup v1 (hybrid): resource limits (--memory, --cpus, --pids-limit) cannot be enforced rootless", Fix: "boot with systemd.unified_cgroup_hierarchy=1"}
	tunMiss  = Item{Check: CheckTun, Name: "/dev/net/tun", Status: Missing, Detail: "permission denied", Fix: "run as root: chmod 666 /dev/net/tun"}
	uidWarn  = Item{Check: CheckSubID, Name: "subgid range", Status: Warning, Detail: "alice: 100000-100999 (1000 ids)"}
	gidNoMap = Item{Check: CheckIDMap, Name: "newgidmap", Status: Missing, Detail: "not found on PATH", Fix: "install it: apt-get install uidmap"}
)

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{OK: "ok", Warning: "warning", Missing: "missing", Status(9): "status(9)"} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, []Item{okItem, subMiss, nsMiss, cgWarn, {Check: CheckTun, Name: "x", Detail: "fine", Fix: "never shown"}}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ok       newuidmap        /usr/bin/newuidmap (setuid root)\n" +
		"missing  subuid range     no range for alice (uid 1000) in /etc/subuid; fix: run as root: usermod --add-subuids 100000-165535 alice\n" +
		"missing  user namespaces  kernel.unprivileged_userns_clone is 0 (required); fix: run as root: sysctl -w kernel.unprivileged_userns_clone=1\n" +
		"warning  cgroup           cgroup v1 (hybrid): resource limits (--memory, --cpus, --pids-limit) cannot be enforced rootless; fix: boot with systemd.unified_cgroup_hierarchy=1\n" +
		"ok       x                fine\n"
	if got := b.String(); got != want {
		t.Errorf("Write:\n%s\nwant:\n%s", got, want)
	}
}

func TestFatal(t *testing.T) {
	tests := []struct {
		name  string
		items []Item
		want  string // "" for nil
	}{
		{"none", nil, ""},
		{"all ok", []Item{okItem}, ""},
		{"optional missing and warnings", []Item{okItem, subMiss, tunMiss, cgWarn}, ""},
		{"required missing", []Item{okItem, subMiss, nsMiss}, "user namespaces: kernel.unprivileged_userns_clone is 0; fix: run as root: sysctl -w kernel.unprivileged_userns_clone=1"},
		{"first of two", []Item{dirMiss, nsMiss}, "runtime dir: XDG_RUNTIME_DIR: /x does not exist; fix: mkdir -m 700 /x"},
		{"required but ok", []Item{{Check: CheckUserNS, Name: "user namespaces", Required: true}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Fatal(tt.items)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Fatal = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Fatal = %v, want %q", err, tt.want)
			}
			if !errors.Is(err, errdefs.ErrFailedPrecondition) {
				t.Errorf("Fatal error %v is not ErrFailedPrecondition", err)
			}
		})
	}
}

func TestSingleUID(t *testing.T) {
	tests := []struct {
		name  string
		items []Item
		want  bool
	}{
		{"all ok", []Item{okItem, {Check: CheckSubID, Name: "subuid range"}}, false},
		{"subuid missing", []Item{okItem, subMiss}, true},
		{"newgidmap missing", []Item{gidNoMap}, true},
		{"few subids map what exists", []Item{okItem, uidWarn}, false},
		{"other checks missing", []Item{okItem, nsMiss, tunMiss, cgWarn}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SingleUID(tt.items); got != tt.want {
				t.Errorf("SingleUID = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name  string
		items []Item
		want  []string
	}{
		{"all ok", []Item{okItem}, nil},
		{"single uid first", []Item{okItem, subMiss, cgWarn}, []string{
			"running in single-UID mode: " + SingleUIDLimits,
			"subuid range: no range for alice (uid 1000) in /etc/subuid; fix: run as root: usermod --add-subuids 100000-165535 alice",
			"cgroup: cgroup v1 (hybrid): resource limits (--memory, --cpus, --pids-limit) cannot be enforced rootless; fix: boot with systemd.unified_cgroup_hierarchy=1",
		}},
		{"no fix", []Item{uidWarn}, []string{"subgid range: alice: 100000-100999 (1000 ids)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Warnings(tt.items); !slices.Equal(got, tt.want) {
				t.Errorf("Warnings =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
