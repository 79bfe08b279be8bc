package shim

import (
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestAdjustSpec(t *testing.T) {
	mem := int64(64 << 20)
	pids := int64(100)
	shares := uint64(512)
	only0 := func(id uint32) bool { return id == 0 }
	sysfs := specs.Mount{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"ro"}}
	devpts := specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"newinstance", "mode=0620", "gid=5"}}
	proc := specs.Mount{Destination: "/proc", Type: "proc", Source: "proc"}
	pidNS := specs.LinuxNamespace{Type: specs.PIDNamespace}
	netNS := specs.LinuxNamespace{Type: specs.NetworkNamespace}
	limits := func() *specs.LinuxResources {
		return &specs.LinuxResources{
			Memory: &specs.LinuxMemory{Limit: &mem},
			Pids:   &specs.LinuxPids{Limit: &pids},
			CPU:    &specs.LinuxCPU{Shares: &shares},
		}
	}
	rootless := Host{InUserNS: true, CgroupLimits: true}
	tests := []struct {
		name          string
		host          Host
		ns            []specs.LinuxNamespace
		res           *specs.LinuxResources
		warnings      int
		keepRes       bool
		sysType       string
		procType      string
		devptsOptions []string
	}{
		{"real root keeps everything", Host{CgroupLimits: true}, nil, limits(), 0, true, "sysfs", "proc", devpts.Options},
		{"rootless v1 drops limits", Host{InUserNS: true}, []specs.LinuxNamespace{pidNS, netNS}, limits(), 3, false, "sysfs", "proc", devpts.Options},
		{"rootless with delegation keeps limits", rootless, []specs.LinuxNamespace{pidNS, netNS}, limits(), 0, true, "sysfs", "proc", devpts.Options},
		{"rootless host network binds /sys", rootless, []specs.LinuxNamespace{pidNS}, nil, 0, false, "bind", "proc", devpts.Options},
		{"rootless host pid binds /proc", rootless, []specs.LinuxNamespace{netNS}, nil, 0, false, "sysfs", "bind", devpts.Options},
		{"single uid drops gid=5", Host{InUserNS: true, CgroupLimits: true, GIDMapped: only0, UIDMapped: only0},
			[]specs.LinuxNamespace{pidNS, netNS}, nil, 0, false, "sysfs", "proc", []string{"newinstance", "mode=0620"}},
		{"no resources, no warnings", Host{InUserNS: true}, []specs.LinuxNamespace{pidNS, netNS}, &specs.LinuxResources{}, 0, false, "sysfs", "proc", devpts.Options},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &specs.Spec{
				Mounts: []specs.Mount{sysfs, devpts, proc},
				Linux:  &specs.Linux{Namespaces: tc.ns, Resources: tc.res},
			}
			spec.Mounts[1].Options = slices.Clone(devpts.Options)
			w := AdjustSpec(spec, tc.host)
			if len(w) != tc.warnings {
				t.Errorf("warnings %q, want %d", w, tc.warnings)
			}
			if (spec.Linux.Resources != nil) != tc.keepRes {
				t.Errorf("resources kept = %v, want %v", spec.Linux.Resources != nil, tc.keepRes)
			}
			if spec.Mounts[0].Type != tc.sysType || spec.Mounts[2].Type != tc.procType {
				t.Errorf("/sys %+v, /proc %+v; want types %s, %s", spec.Mounts[0], spec.Mounts[2], tc.sysType, tc.procType)
			}
			if !slices.Equal(spec.Mounts[1].Options, tc.devptsOptions) {
				t.Errorf("devpts options %q, want %q", spec.Mounts[1].Options, tc.devptsOptions)
			}
			// Idempotent: the engine and the shim both call it.
			before := len(spec.Mounts)
			if w2 := AdjustSpec(spec, tc.host); len(w2) != 0 || len(spec.Mounts) != before {
				t.Errorf("second call warned %q", w2)
			}
		})
	}
}

func TestLimitWarningsText(t *testing.T) {
	mem := int64(1)
	w := limitWarnings(&specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &mem}})
	// The docker CLI prints these verbatim; keep Docker's wording.
	want := "Your kernel does not support memory limit capabilities or the cgroup is not mounted. Limitation discarded."
	if len(w) != 1 || w[0] != want {
		t.Errorf("warnings %q", w)
	}
}

// A --device rule narrower than read and write is warned of where device
// rules are not applied; the defaults (deny all, then rwm allows) are not.
func TestDeviceRuleWarning(t *testing.T) {
	one := int64(1)
	defaults := []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: &one, Minor: &one, Access: "rwm"}}
	if w := limitWarnings(&specs.LinuxResources{Devices: defaults}); len(w) != 0 {
		t.Errorf("defaults warned %q", w)
	}
	for access, warned := range map[string]bool{"r": true, "w": true, "rm": true, "rw": false, "rwm": false} {
		rules := append(slices.Clone(defaults), specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: &one, Minor: &one, Access: access})
		w := limitWarnings(&specs.LinuxResources{Devices: rules})
		if (len(w) == 1 && strings.Contains(w[0], "Device access "+access+" discarded")) != warned || len(w) > 1 {
			t.Errorf("access %s: warnings %q", access, w)
		}
	}
}
