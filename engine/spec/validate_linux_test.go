package spec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/opencontainers/runc/libcontainer/configs/validate"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// The specs Build produces must be accepted by libcontainer as the shim
// uses it: converted with the shim's options and validated.
func TestBuildPassesLibcontainerValidation(t *testing.T) {
	host := t.TempDir()
	writeFiles(t, host, map[string]string{"data/x": "", "hosts": "", "hostname": "", "resolv.conf": "", "init": ""})
	tests := []struct {
		name   string
		modify func(*Input)
	}{
		{name: "defaults", modify: func(*Input) {}},
		{name: "everything", modify: func(in *Input) {
			hc := in.HostConfig
			in.Config.User = "app"
			in.Config.Tty = true
			in.Config.Domainname = "example.org"
			in.Config.WorkingDir = "/work"
			in.EtcFiles = EtcFiles{Hosts: filepath.Join(host, "hosts"), Hostname: filepath.Join(host, "hostname"), ResolvConf: filepath.Join(host, "resolv.conf")}
			in.InitPath = filepath.Join(host, "init")
			hc.Init = ptr(true)
			hc.Binds = []string{filepath.Join(host, "data") + ":/data:ro"}
			hc.Mounts = []mount.Mount{{Type: "tmpfs", Target: "/scratch", TmpfsOptions: &mount.TmpfsOptions{SizeBytes: 1 << 20}}}
			hc.Tmpfs = map[string]string{"/run": "size=1m"}
			hc.ReadonlyRootfs = true
			hc.ShmSize = 1 << 20
			hc.CapAdd = []string{"NET_ADMIN"}
			hc.CapDrop = []string{"MKNOD"}
			hc.Ulimits = []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "core", Soft: 0, Hard: -1}}
			hc.SecurityOpt = []string{"no-new-privileges"}
			hc.Memory = 64 << 20
			hc.NanoCPUs = 5e8
			hc.PidsLimit = ptr(int64(50))
			hc.CpusetCpus = "0"
			hc.GroupAdd = []string{"staff"}
		}},
		{name: "host network", modify: func(in *Input) { in.HostConfig.NetworkMode = "host" }},
		// The validator only compares the path's inode with our own netns.
		{name: "joined network namespace", modify: func(in *Input) { in.NetNSPath = filepath.Join(host, "hosts") }},
		{name: "none network", modify: func(in *Input) { in.HostConfig.NetworkMode = "none" }},
		{name: "host pid, ipc and uts", modify: func(in *Input) {
			in.HostConfig.PidMode = "host"
			in.HostConfig.IpcMode = "host"
			in.HostConfig.UTSMode = "host"
		}},
		{name: "privileged", modify: func(in *Input) { in.HostConfig.Privileged = true }},
		{name: "single-UID rootless", modify: func(in *Input) { in.SingleUID = true; in.Rootless = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.modify(&in)
			s := build(t, in)
			if err := libcontainerCheck(s, in.ID); err != nil {
				t.Fatal(err)
			}
			// And after the shim fits it to a rootless engine on a cgroup v1
			// host, the hardest case.
			shim.AdjustSpec(s, shim.Host{InUserNS: true, UIDMapped: func(id uint32) bool { return id == 0 }, GIDMapped: func(id uint32) bool { return id == 0 }})
			if err := libcontainerCheck(s, in.ID); err != nil {
				t.Fatalf("after AdjustSpec: %v", err)
			}
		})
	}

	// The check is live: a request Docker also lets through to the runtime
	// (a network sysctl with host networking) is caught by it.
	in := testInput(t)
	in.HostConfig.NetworkMode = "host"
	in.HostConfig.Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
	if err := libcontainerCheck(build(t, in), in.ID); err == nil {
		t.Error("libcontainer accepted a net sysctl without a network namespace")
	}
}

func libcontainerCheck(s *specs.Spec, id string) error {
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:      id,
		Spec:            s,
		RootlessEUID:    false,
		RootlessCgroups: true,
	})
	if err != nil {
		return fmt.Errorf("CreateLibcontainerConfig: %w", err)
	}
	if err := validate.Validate(cfg); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	return nil
}
