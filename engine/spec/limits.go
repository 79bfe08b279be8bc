package spec

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Rlimit is a soft and hard limit as getrlimit(2) reports them
// (math.MaxUint64 is unlimited).
type Rlimit struct{ Soft, Hard uint64 }

// rlimitNames are the names Docker's --ulimit accepts.
var rlimitNames = []string{
	"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue",
	"nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack",
}

// defaultRlimits are set even when nobody asks, from the engine's own
// limits. NOFILE matters: the Go runtime raised the engine's soft limit to
// the hard one, which is what containers get (Docker's containers commonly
// do too); NPROC is set so the spec records what the container runs with.
var defaultRlimits = []string{"nofile", "nproc"}

// rlimits merges the engine's defaults, the daemon's default-ulimits and
// the request's Ulimits (the later wins per name). A rootless engine
// cannot raise a hard limit above its own (that needs CAP_SYS_RESOURCE in
// the initial user namespace), so such a request is an
// errdefs.ErrInvalidArgument that says so, not a failed start.
func (b *builder) rlimits() ([]specs.POSIXRlimit, error) {
	want := map[string]Rlimit{}
	for _, name := range defaultRlimits {
		if l, ok := b.hostRlimit(name); ok {
			want[name] = l
		}
	}
	for _, list := range [][]*container.Ulimit{b.in.DefaultUlimits, b.hc.Ulimits} {
		for _, u := range list {
			if u == nil {
				continue
			}
			name := strings.ToLower(u.Name)
			if !slices.Contains(rlimitNames, name) {
				return nil, fmt.Errorf("invalid ulimit type: %s: %w", u.Name, errdefs.ErrInvalidArgument)
			}
			l := Rlimit{Soft: ulimitValue(u.Soft), Hard: ulimitValue(u.Hard)}
			if l.Soft > l.Hard {
				return nil, fmt.Errorf("ulimit %s: soft limit must be less than or equal to hard limit: %d > %d: %w", name, u.Soft, u.Hard, errdefs.ErrInvalidArgument)
			}
			if b.in.Rootless {
				if host, ok := b.hostRlimit(name); ok && l.Hard > host.Hard {
					return nil, fmt.Errorf("ulimit %s: hard limit %s is above the engine's own hard limit %s, which a rootless engine cannot raise (raise it for the user, e.g. in /etc/security/limits.conf, and restart hutch): %w",
						name, formatLimit(l.Hard), formatLimit(host.Hard), errdefs.ErrInvalidArgument)
				}
			}
			want[name] = l
		}
	}
	out := make([]specs.POSIXRlimit, 0, len(want))
	for _, name := range slices.Sorted(maps.Keys(want)) {
		l := want[name]
		out = append(out, specs.POSIXRlimit{Type: "RLIMIT_" + strings.ToUpper(name), Soft: l.Soft, Hard: l.Hard})
	}
	return out, nil
}

// ulimitValue maps Docker's -1 (unlimited) to RLIM_INFINITY.
func ulimitValue(v int64) uint64 {
	if v < 0 {
		return math.MaxUint64
	}
	return uint64(v)
}

func formatLimit(v uint64) string {
	if v == math.MaxUint64 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}

func (b *builder) hostRlimit(name string) (Rlimit, bool) {
	if b.in.HostRlimits != nil {
		l, ok := b.in.HostRlimits[name]
		return l, ok
	}
	return getrlimit(name)
}

// resources translates HostConfig's cgroup settings as Docker does. Where
// the host cannot enforce them, shim.AdjustSpec removes them and words the
// warnings; nothing is warned here, so nothing is warned twice.
func (b *builder) resources() (*specs.LinuxResources, error) {
	r := b.hc.Resources
	switch {
	case len(r.DeviceRequests) > 0:
		return nil, fmt.Errorf("device requests (--gpus) are not supported yet: %w", errdefs.ErrNotImplemented)
	case r.NanoCPUs > 0 && r.CPUPeriod > 0:
		//lint:ignore ST1005 Docker's wording, which clients show as is
		return nil, fmt.Errorf("Conflicting options: Nano CPUs and CPU Period cannot both be set: %w", errdefs.ErrInvalidArgument)
	case r.NanoCPUs > 0 && r.CPUQuota > 0:
		//lint:ignore ST1005 Docker's wording, which clients show as is
		return nil, fmt.Errorf("Conflicting options: Nano CPUs and CPU Quota cannot both be set: %w", errdefs.ErrInvalidArgument)
	case r.CPUShares < 0:
		return nil, fmt.Errorf("invalid CPU shares (%d): value must be a positive integer: %w", r.CPUShares, errdefs.ErrInvalidArgument)
	case r.NanoCPUs < 0 || r.Memory < 0 || r.MemoryReservation < 0 || r.CPUPeriod < 0:
		return nil, fmt.Errorf("negative resource limits are invalid: %w", errdefs.ErrInvalidArgument)
	case len(r.BlkioWeightDevice)+len(r.BlkioDeviceReadBps)+len(r.BlkioDeviceWriteBps)+len(r.BlkioDeviceReadIOps)+len(r.BlkioDeviceWriteIOps) > 0:
		return nil, fmt.Errorf("per-device block I/O limits are not supported yet: %w", errdefs.ErrNotImplemented)
	}
	res := &specs.LinuxResources{Devices: deviceRules(b.hc.Privileged)}
	devs, err := b.userDevices()
	if err != nil {
		return nil, err
	}
	b.devices = devs
	for _, d := range devs {
		res.Devices = append(res.Devices, d.rule())
	}
	for _, raw := range r.DeviceCgroupRules {
		rule, err := ParseDeviceRule(raw)
		if err != nil {
			return nil, err
		}
		res.Devices = append(res.Devices, rule)
	}

	var mem specs.LinuxMemory
	if r.Memory > 0 {
		mem.Limit = ptr(r.Memory)
	}
	if r.MemoryReservation > 0 {
		mem.Reservation = ptr(r.MemoryReservation)
	}
	if r.MemorySwap > 0 || r.MemorySwap == -1 {
		mem.Swap = ptr(r.MemorySwap)
	}
	if r.MemorySwappiness != nil && *r.MemorySwappiness >= 0 {
		mem.Swappiness = ptr(uint64(*r.MemorySwappiness))
	}
	if r.OomKillDisable != nil && *r.OomKillDisable {
		mem.DisableOOMKiller = ptr(true)
	}
	if mem != (specs.LinuxMemory{}) {
		res.Memory = &mem
	}

	var cpu specs.LinuxCPU
	if r.CPUShares > 0 {
		cpu.Shares = ptr(uint64(r.CPUShares))
	}
	cpu.Cpus, cpu.Mems = r.CpusetCpus, r.CpusetMems
	if r.NanoCPUs > 0 {
		// Docker's --cpus: a quota per 100 ms period.
		const period = 100_000
		cpu.Period = ptr(uint64(period))
		cpu.Quota = ptr(r.NanoCPUs * period / 1e9)
	}
	if r.CPUPeriod > 0 {
		cpu.Period = ptr(uint64(r.CPUPeriod))
	}
	if r.CPUQuota != 0 {
		cpu.Quota = ptr(r.CPUQuota)
	}
	if r.CPURealtimePeriod > 0 {
		cpu.RealtimePeriod = ptr(uint64(r.CPURealtimePeriod))
	}
	if r.CPURealtimeRuntime != 0 {
		cpu.RealtimeRuntime = ptr(r.CPURealtimeRuntime)
	}
	if cpu != (specs.LinuxCPU{}) {
		res.CPU = &cpu
	}

	if r.PidsLimit != nil {
		// 0 and negative mean unlimited in Docker's API; runc wants -1.
		limit := *r.PidsLimit
		if limit <= 0 {
			limit = -1
		}
		res.Pids = &specs.LinuxPids{Limit: ptr(limit)}
	}
	if r.BlkioWeight > 0 {
		res.BlockIO = &specs.LinuxBlockIO{Weight: ptr(r.BlkioWeight)}
	}
	return res, nil
}

func ptr[T any](v T) *T { return &v }

// deviceRules are Docker's device cgroup rules: deny everything but the
// devices every container has (null, zero, full, random, urandom, tty,
// console, ptmx), and deny /dev/net/tun explicitly; privileged containers
// may use any device.
func deviceRules(privileged bool) []specs.LinuxDeviceCgroup {
	if privileged {
		return []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	}
	c := func(allow bool, major, minor int64) specs.LinuxDeviceCgroup {
		return specs.LinuxDeviceCgroup{Allow: allow, Type: "c", Major: ptr(major), Minor: ptr(minor), Access: "rwm"}
	}
	return []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		c(true, 1, 5), c(true, 1, 3), c(true, 1, 9), c(true, 1, 8),
		c(true, 5, 0), c(true, 5, 1),
		c(false, 10, 229),
	}
}
