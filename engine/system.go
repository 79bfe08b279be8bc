package engine

import (
	"bufio"
	"cmp"
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/api/types/system"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/spec"
	"github.com/hutch-engine/hutch/version"
)

// Info answers GET /info.
func (e *Engine) Info(ctx context.Context) (*system.Info, error) {
	host, _ := os.Hostname()
	security := []string{}
	var warnings []string
	if !e.seccomp.off {
		// Docker's words: the profile's name, or the path of a custom one.
		security = append(security, "name=seccomp,profile="+e.seccomp.name)
		if e.seccomp.name != spec.SeccompBuiltin {
			warnings = append(warnings, "WARNING: daemon is not using the default seccomp profile")
		}
	}
	if e.opts.Rootless {
		security = append(security, "name=rootless")
	}
	cgVersion, cgDriver := cgroupFacts(e.opts.Rootless)
	info := &system.Info{
		ID:                 e.id,
		Name:               host,
		SystemTime:         time.Now().Format(time.RFC3339Nano),
		OSType:             "linux",
		Architecture:       machineArch(),
		KernelVersion:      kernelVersion(),
		OperatingSystem:    operatingSystem(),
		OSVersion:          osRelease()["VERSION_ID"],
		NCPU:               runtime.NumCPU(),
		MemTotal:           memTotal(),
		SecurityOptions:    security,
		CgroupDriver:       cgDriver,
		CgroupVersion:      cgVersion,
		DockerRootDir:      e.opts.DataRoot,
		ServerVersion:      version.Version,
		LoggingDriver:      cmp.Or(e.opts.LogConfig.Type, logJSONFile),
		IndexServerAddress: "https://index.docker.io/v1/",
		NGoroutines:        runtime.NumGoroutine(),
		Warnings:           append(append([]string(nil), e.opts.Warnings...), warnings...),
		LiveRestoreEnabled: e.opts.LiveRestore,
		DefaultRuntime:     "runc",
		Plugins: system.PluginsInfo{
			Volume:  []string{"local"},
			Network: []string{"bridge", "host", "null"},
			Log:     []string{logJSONFile, logLocal, logNone},
		},
		Runtimes: map[string]system.RuntimeWithStatus{"runc": {Runtime: system.Runtime{Path: "hutch-runtime"}}},
		// Never part of a swarm, as the swarm endpoints say (apiserver/swarm.go).
		Swarm: swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive},
	}
	if e.images != nil {
		info.Driver = e.images.Driver()
		info.DriverStatus = e.images.DriverStatus()
		info.Images = e.imageCount(ctx)
	}
	if list, err := e.containers.List(ctx, container.ListOptions{All: true}); err == nil {
		for _, c := range list {
			info.Containers++
			switch {
			case c.State.Paused():
				info.ContainersPaused++
			case c.State.Running():
				info.ContainersRunning++
			default:
				info.ContainersStopped++
			}
		}
	}
	return info, nil
}

// Version answers GET /version. The engine component's Details carry the
// keys Docker sends: clients read Experimental from them (the Go SDK's
// users parse it with strconv.ParseBool), the API server sets it.
func (e *Engine) Version(ctx context.Context) (*system.VersionResponse, error) {
	details := map[string]string{
		"ApiVersion":    e.opts.APIVersion,
		"MinAPIVersion": e.opts.MinAPIVersion,
		"GitCommit":     version.GitCommit(),
		"GoVersion":     runtime.Version(),
		"Os":            runtime.GOOS,
		"Arch":          runtime.GOARCH,
		"BuildTime":     version.BuildTime(),
		"KernelVersion": kernelVersion(),
		"Module":        version.Module,
		"ModuleVersion": version.Version,
		"Experimental":  "false",
	}
	return &system.VersionResponse{
		Platform:      system.PlatformInfo{Name: "hutch " + version.Version},
		Version:       version.Version,
		APIVersion:    e.opts.APIVersion,
		MinAPIVersion: e.opts.MinAPIVersion,
		Os:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		GitCommit:     version.GitCommit(),
		GoVersion:     runtime.Version(),
		KernelVersion: kernelVersion(),
		BuildTime:     version.BuildTime(),
		Components:    []system.ComponentVersion{{Name: "Engine", Version: version.Version, Details: details}},
	}, nil
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func machineArch() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return runtime.GOARCH
	}
	return unix.ByteSliceToString(u.Machine[:])
}

func osRelease() map[string]string {
	m := map[string]string{}
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return m
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if ok {
			m[k] = strings.Trim(v, `"'`)
		}
	}
	return m
}

func operatingSystem() string {
	if name := osRelease()["PRETTY_NAME"]; name != "" {
		return name
	}
	return "Linux"
}

func memTotal() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// cgroupFacts reports the cgroup version and the driver Docker would show:
// rootless on cgroup v1 has no usable cgroups at all ("none").
func cgroupFacts(rootless bool) (ver, driver string) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "2", "cgroupfs"
	}
	if rootless {
		return "1", "none"
	}
	return "1", "cgroupfs"
}
