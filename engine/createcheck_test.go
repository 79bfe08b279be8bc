package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

func TestCheckCreate(t *testing.T) {
	swappiness := func(v int64) *int64 { return &v }
	tests := []struct {
		name string
		cfg  containertypes.Config
		hc   containertypes.HostConfig
		want string // "" for accepted
	}{
		{name: "defaults"},
		{name: "env", cfg: containertypes.Config{Env: []string{"A=1", "B", "C="}}},
		{name: "empty env", cfg: containertypes.Config{Env: []string{""}}, want: "invalid environment variable: "},
		{name: "env without a name", cfg: containertypes.Config{Env: []string{"="}}, want: "invalid environment variable: ="},
		{name: "env value without a name", cfg: containertypes.Config{Env: []string{"A=1", "=foo"}}, want: "invalid environment variable: =foo"},
		{name: "long hostname", cfg: containertypes.Config{Hostname: string(make([]byte, 65))}, want: "is too long (maximum 64 bytes)"},
		{name: "annotation key", hc: containertypes.HostConfig{Annotations: map[string]string{"": "a"}}, want: "invalid Annotations: the empty string is not permitted as an annotation key"},
		{name: "cpu shares", hc: containertypes.HostConfig{Resources: containertypes.Resources{CPUShares: -1}}, want: "invalid CPU shares (-1): value must be a positive integer"},
		{name: "memory", hc: containertypes.HostConfig{Resources: containertypes.Resources{Memory: 6 << 20}}},
		{name: "memory too low", hc: containertypes.HostConfig{Resources: containertypes.Resources{CPUShares: 100, Memory: 524287}}, want: "Minimum memory limit allowed is 6MB"},
		{name: "negative memory", hc: containertypes.HostConfig{Resources: containertypes.Resources{Memory: -1}}, want: "Minimum memory limit allowed is 6MB"},
		{name: "swap below memory", hc: containertypes.HostConfig{Resources: containertypes.Resources{Memory: 64 << 20, MemorySwap: 32 << 20}}, want: "Minimum memoryswap limit should be larger than memory limit, see usage"},
		{name: "swap without memory", hc: containertypes.HostConfig{Resources: containertypes.Resources{MemorySwap: 32 << 20}}, want: "You should always set the Memory limit when using Memoryswap limit, see usage"},
		{name: "unlimited swap", hc: containertypes.HostConfig{Resources: containertypes.Resources{Memory: 64 << 20, MemorySwap: -1}}},
		{name: "swappiness unset", hc: containertypes.HostConfig{Resources: containertypes.Resources{MemorySwappiness: swappiness(-1)}}},
		{name: "swappiness", hc: containertypes.HostConfig{Resources: containertypes.Resources{MemorySwappiness: swappiness(101)}}, want: "Invalid value: 101, valid memory swappiness range is 0-100"},
		{name: "reservation too low", hc: containertypes.HostConfig{Resources: containertypes.Resources{MemoryReservation: 1 << 20}}, want: "Minimum memory reservation allowed is 6MB"},
		{name: "reservation over memory", hc: containertypes.HostConfig{Resources: containertypes.Resources{Memory: 8 << 20, MemoryReservation: 16 << 20}}, want: "Minimum memory limit can not be less than memory reservation limit, see usage"},
		{name: "cpus and period", hc: containertypes.HostConfig{Resources: containertypes.Resources{NanoCPUs: 5e8, CPUPeriod: 100000}}, want: "Conflicting options: Nano CPUs and CPU Period cannot both be set"},
		{name: "negative cpus", hc: containertypes.HostConfig{Resources: containertypes.Resources{NanoCPUs: -1}}, want: "range of CPUs is from 0.01 to"},
		{name: "cpu period", hc: containertypes.HostConfig{Resources: containertypes.Resources{CPUPeriod: 999}}, want: "CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)"},
		{name: "cpu quota", hc: containertypes.HostConfig{Resources: containertypes.Resources{CPUQuota: 999}}, want: "CPU cfs quota can not be less than 1ms (i.e. 1000)"},
		{name: "blkio weight", hc: containertypes.HostConfig{Resources: containertypes.Resources{BlkioWeight: 5}}, want: "Range of blkio weight is from 10 to 1000"},
		{name: "ipc modes", hc: containertypes.HostConfig{IpcMode: "shareable", PidMode: "host", UTSMode: "host"}},
		{name: "ipc container", hc: containertypes.HostConfig{IpcMode: "container:other", PidMode: "container:other"}},
		{name: "ipc mode", hc: containertypes.HostConfig{IpcMode: "invalid"}, want: "invalid IPC mode: invalid"},
		{name: "pid mode", hc: containertypes.HostConfig{PidMode: "invalid"}, want: "invalid PID mode: invalid"},
		{name: "pid mode without a container", hc: containertypes.HostConfig{PidMode: "container"}, want: "invalid PID mode: container"},
		{name: "uts mode", hc: containertypes.HostConfig{UTSMode: "invalid"}, want: "invalid UTS mode: invalid"},
		{name: "cgroupns mode", hc: containertypes.HostConfig{CgroupnsMode: "invalid"}, want: "invalid cgroup namespace mode: invalid"},
		{name: "shm size", hc: containertypes.HostConfig{ShmSize: -1}, want: "SHM size can not be less than 0"},
		{name: "oom score", hc: containertypes.HostConfig{OomScoreAdj: 1001}, want: "Invalid value 1001, range for oom score adj is [-1000, 1000]"},
		{name: "runtime", hc: containertypes.HostConfig{Runtime: "runc"}},
		{name: "other runtime", hc: containertypes.HostConfig{Runtime: "kata"}, want: "unknown or invalid runtime name: kata"},
		{name: "tmpfs", hc: containertypes.HostConfig{Tmpfs: map[string]string{"/run": "size=1m"}}},
		{name: "tmpfs dot", hc: containertypes.HostConfig{Tmpfs: map[string]string{".": ""}}, want: "invalid mount path: '.' mount path must be absolute"},
		{name: "tmpfs relative", hc: containertypes.HostConfig{Tmpfs: map[string]string{"foo": ""}}, want: "invalid mount path: 'foo' mount path must be absolute"},
		{name: "tmpfs root", hc: containertypes.HostConfig{Tmpfs: map[string]string{"/": ""}}, want: "invalid specification: destination can't be '/'"},
		{name: "tmpfs double root", hc: containertypes.HostConfig{Tmpfs: map[string]string{"//": ""}}, want: "invalid specification: destination can't be '/'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCreate(&tt.cfg, &tt.hc)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", tt.want)
			case !errdefs.IsInvalidArgument(err):
				t.Errorf("error %v is not a bad parameter", err)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestFillCreateDefaults(t *testing.T) {
	masked, ro := []string{"/proc/kcore"}, []string{"/proc/sys"}
	hc := &containertypes.HostConfig{}
	fillCreateDefaults(hc, masked, ro)
	if hc.IpcMode != "private" || hc.Runtime != "runc" || !slices.Equal(hc.MaskedPaths, masked) || !slices.Equal(hc.ReadonlyPaths, ro) {
		t.Errorf("defaults: %q %q %v %v", hc.IpcMode, hc.Runtime, hc.MaskedPaths, hc.ReadonlyPaths)
	}
	// What the request gives stays, an empty list too; a privileged
	// container gets no list.
	hc = &containertypes.HostConfig{IpcMode: "shareable", MaskedPaths: []string{}, ReadonlyPaths: []string{"/proc/bus"}}
	fillCreateDefaults(hc, masked, ro)
	if hc.IpcMode != "shareable" || hc.MaskedPaths == nil || len(hc.MaskedPaths) != 0 || !slices.Equal(hc.ReadonlyPaths, []string{"/proc/bus"}) {
		t.Errorf("given: %q %v %v", hc.IpcMode, hc.MaskedPaths, hc.ReadonlyPaths)
	}
	hc = &containertypes.HostConfig{Privileged: true}
	fillCreateDefaults(hc, masked, ro)
	if hc.MaskedPaths != nil || hc.ReadonlyPaths != nil {
		t.Errorf("privileged: %v %v", hc.MaskedPaths, hc.ReadonlyPaths)
	}
}
