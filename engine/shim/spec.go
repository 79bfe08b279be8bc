package shim

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Host says what the environment the shim runs in allows; DetectHost fills
// it in.
type Host struct {
	// InUserNS: the shim runs in a user namespace that is not the initial
	// one (rootlesskit's, or a single-UID one): rootless cgroups, and sysfs
	// can be mounted only in a network namespace the user namespace owns.
	InUserNS bool
	// CgroupLimits: per-container cgroup limits can be enforced (real root,
	// or cgroup v2 with a delegated, writable subtree).
	CgroupLimits bool
	// GIDMapped reports whether a group id exists in the current user
	// namespace; nil means all do.
	GIDMapped func(uint32) bool
	// UIDMapped is the same for user ids.
	UIDMapped func(uint32) bool
}

// limitWarnings lists the limits r sets, in Docker's own words for limits
// it cannot apply, so users see the text they know.
func limitWarnings(r *specs.LinuxResources) []string {
	var w []string
	add := func(set bool, text string) {
		if set {
			w = append(w, text)
		}
	}
	if m := r.Memory; m != nil {
		add(positive(m.Limit), "Your kernel does not support memory limit capabilities or the cgroup is not mounted. Limitation discarded.")
		add(positive(m.Reservation), "Your kernel does not support memory soft limit capabilities or the cgroup is not mounted. Limitation discarded.")
		add(positive(m.Swap), "Your kernel does not support swap limit capabilities or the cgroup is not mounted. Memory limited without swap.")
	}
	if c := r.CPU; c != nil {
		add(positive(c.Shares), "Your kernel does not support CPU shares or the cgroup is not mounted. Shares discarded.")
		add(positive(c.Period), "Your kernel does not support CPU CFS period or the cgroup is not mounted. Period discarded.")
		add(positive(c.Quota), "Your kernel does not support CPU CFS quota or the cgroup is not mounted. Quota discarded.")
		add(c.Cpus != "" || c.Mems != "", "Your kernel does not support cpuset or the cgroup is not mounted. Cpuset discarded.")
	}
	if r.Pids != nil {
		add(positive(r.Pids.Limit), "Your kernel does not support pids limit capabilities or the cgroup is not mounted. PIDs limit discarded.")
	}
	if b := r.BlockIO; b != nil {
		add(positive(b.Weight), "Your kernel does not support Block I/O weight or the cgroup is not mounted. Weight discarded.")
		add(len(b.ThrottleReadBpsDevice) > 0, "Your kernel does not support BPS Block I/O read limit or the cgroup is not mounted. Block I/O BPS read limit discarded.")
		add(len(b.ThrottleWriteBpsDevice) > 0, "Your kernel does not support BPS Block I/O write limit or the cgroup is not mounted. Block I/O BPS write limit discarded.")
	}
	for _, d := range r.Devices {
		if d.Allow && d.Type != "" && d.Type != "a" && !(strings.Contains(d.Access, "r") && strings.Contains(d.Access, "w")) {
			w = append(w, "Your kernel does not support device cgroup permissions or the cgroup is not mounted. Device access "+d.Access+" discarded: the device is fully accessible.")
			break
		}
	}
	return w
}

func positive[T int64 | uint64 | uint16](v *T) bool { return v != nil && *v > 0 }

// AdjustSpec fits spec to what h allows and returns a warning for each
// setting it had to drop (the engine shows them in the create response).
// It is idempotent, so the engine may call it at create time for the
// warnings and the shim again before running.
//
//   - Without enforceable limits (rootless on a cgroup v1 host) libcontainer
//     fails to start a container that asks for any ("could not join or
//     create cgroup"): the resources are removed.
//   - In a user namespace without a network namespace of its own (host
//     networking) the kernel refuses to mount sysfs: /sys is bind-mounted
//     read-only instead.
//   - Likewise procfs without a pid namespace of its own (--pid host):
//     /proc is bind-mounted.
//   - uid=/gid= mount options naming ids that the user namespace does not
//     map (single-UID mode: devpts gid=5) make the mount fail: dropped.
func AdjustSpec(spec *specs.Spec, h Host) (warnings []string) {
	if spec.Linux != nil && spec.Linux.Resources != nil && !h.CgroupLimits {
		warnings = limitWarnings(spec.Linux.Resources)
		spec.Linux.Resources = nil
	}
	ownNetNS, ownPidNS := false, false
	if spec.Linux != nil {
		for _, ns := range spec.Linux.Namespaces {
			switch ns.Type {
			case specs.NetworkNamespace:
				ownNetNS = true
			case specs.PIDNamespace:
				ownPidNS = true
			}
		}
	}
	for i := range spec.Mounts {
		m := &spec.Mounts[i]
		switch {
		case h.InUserNS && !ownNetNS && m.Type == "sysfs" && filepath.Clean(m.Destination) == "/sys":
			*m = hostBind("/sys", "ro")
		case h.InUserNS && !ownPidNS && m.Type == "proc" && filepath.Clean(m.Destination) == "/proc":
			*m = hostBind("/proc")
		default:
			m.Options = mappedIDOptions(m.Options, h)
		}
	}
	return warnings
}

func hostBind(path string, extra ...string) specs.Mount {
	return specs.Mount{
		Destination: path, Type: "bind", Source: path,
		Options: append([]string{"rbind", "nosuid", "noexec", "nodev"}, extra...),
	}
}

func mappedIDOptions(opts []string, h Host) []string {
	out := opts[:0]
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		if k == "uid" || k == "gid" {
			id, err := strconv.ParseUint(v, 10, 32)
			mapped := h.UIDMapped
			if k == "gid" {
				mapped = h.GIDMapped
			}
			if err == nil && mapped != nil && !mapped(uint32(id)) {
				continue
			}
		}
		out = append(out, o)
	}
	return out
}
