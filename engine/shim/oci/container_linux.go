package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// bundleSpec is config.json with its seccomp profile left as it is
// written: the runtime decodes a profile only to compile it, and most
// starts find it compiled (seccomp_linux.go).
type bundleSpec struct {
	specs.Spec
	Linux *struct {
		specs.Linux
		Seccomp json.RawMessage `json:"seccomp,omitempty"`
	} `json:"linux,omitempty"`
}

// loadSpec reads the bundle's config.json and fits it to this host. The
// spec's seccomp profile comes apart, as it is written (nil: none).
func loadSpec(bundle string, host shim.Host, log *slog.Logger) (*specs.Spec, json.RawMessage, error) {
	b, err := os.ReadFile(filepath.Join(bundle, wire.SpecFile))
	if err != nil {
		return nil, nil, err
	}
	var bs bundleSpec
	if err := json.Unmarshal(b, &bs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %w", wire.SpecFile, err, errdefs.ErrInvalidArgument)
	}
	spec := &bs.Spec
	var seccomp json.RawMessage
	if bs.Linux != nil {
		spec.Linux = &bs.Linux.Linux
		if s := string(bs.Linux.Seccomp); s != "" && s != "null" {
			seccomp = bs.Linux.Seccomp
		}
	}
	if spec.Process == nil || len(spec.Process.Args) == 0 {
		return nil, nil, fmt.Errorf("%s: no process args: %w", wire.SpecFile, errdefs.ErrInvalidArgument)
	}
	if spec.Root == nil || !filepath.IsAbs(spec.Root.Path) {
		return nil, nil, fmt.Errorf("%s: root.path must be absolute: %w", wire.SpecFile, errdefs.ErrInvalidArgument)
	}
	for _, w := range shim.AdjustSpec(spec, host) {
		log.Warn("spec adjusted", "warning", w)
	}
	return spec, seccomp, nil
}

// createContainer makes the libcontainer container, replacing a stopped
// leftover of an earlier run with the same id (a shim killed with -9 leaves
// its state directory behind).
// It returns the container's seccomp program, kept in its state directory,
// for its init (nil: no filter).
func createContainer(cfg *wire.Config, spec *specs.Spec, seccomp json.RawMessage, host shim.Host) (*libcontainer.Container, []byte, error) {
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("the shim must run as uid 0 (real root or inside the rootless user namespace): %w", errdefs.ErrFailedPrecondition)
	}
	prog, err := programs(cfg.StateDir).Get(seccomp)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	lc, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName: cfg.ID,
		Spec:       spec,
		// uid 0 inside the user namespace is root enough for libcontainer;
		// the container shares that namespace instead of creating one.
		RootlessEUID:    false,
		RootlessCgroups: host.InUserNS,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("container config: %w: %w", err, errdefs.ErrInvalidArgument)
	}
	if prog != nil {
		markSeccomp(lc)
	}
	c, err := libcontainer.Create(cfg.StateDir, cfg.ID, lc)
	if errors.Is(err, libcontainer.ErrExist) {
		old, lerr := libcontainer.Load(cfg.StateDir, cfg.ID)
		if lerr != nil {
			return nil, nil, err
		}
		if st, _ := old.Status(); st != libcontainer.Stopped {
			return nil, nil, fmt.Errorf("container %s is %s in %s: %w", cfg.ID, st, cfg.StateDir, errdefs.ErrConflict)
		}
		if derr := old.Destroy(); derr != nil {
			return nil, nil, derr
		}
		c, err = libcontainer.Create(cfg.StateDir, cfg.ID, lc)
	}
	if err != nil {
		return nil, nil, err
	}
	if prog != nil {
		if err := saveSeccomp(cfg, prog); err != nil {
			_ = c.Destroy()
			return nil, nil, err
		}
	}
	return c, prog, nil
}

// newProcess converts an OCI process to libcontainer's.
func newProcess(p *specs.Process, init bool) (*libcontainer.Process, error) {
	lp := &libcontainer.Process{
		Args:            p.Args,
		Env:             p.Env,
		UID:             int(p.User.UID),
		GID:             int(p.User.GID),
		Cwd:             p.Cwd,
		NoNewPrivileges: &p.NoNewPrivileges,
		Init:            init,
	}
	for _, g := range p.User.AdditionalGids {
		lp.AdditionalGroups = append(lp.AdditionalGroups, int(g))
	}
	if p.ConsoleSize != nil {
		lp.ConsoleHeight, lp.ConsoleWidth = uint16(p.ConsoleSize.Height), uint16(p.ConsoleSize.Width)
	}
	if c := p.Capabilities; c != nil {
		lp.Capabilities = &configs.Capabilities{
			Bounding: c.Bounding, Effective: c.Effective, Inheritable: c.Inheritable,
			Permitted: c.Permitted, Ambient: c.Ambient,
		}
	}
	for _, rl := range p.Rlimits {
		t, ok := rlimitType(rl.Type)
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q: %w", rl.Type, errdefs.ErrInvalidArgument)
		}
		lp.Rlimits = append(lp.Rlimits, configs.Rlimit{Type: t, Hard: rl.Hard, Soft: rl.Soft})
	}
	return lp, nil
}

func rlimitType(name string) (int, bool) {
	switch name {
	case "RLIMIT_CPU":
		return unix.RLIMIT_CPU, true
	case "RLIMIT_FSIZE":
		return unix.RLIMIT_FSIZE, true
	case "RLIMIT_DATA":
		return unix.RLIMIT_DATA, true
	case "RLIMIT_STACK":
		return unix.RLIMIT_STACK, true
	case "RLIMIT_CORE":
		return unix.RLIMIT_CORE, true
	case "RLIMIT_RSS":
		return unix.RLIMIT_RSS, true
	case "RLIMIT_NPROC":
		return unix.RLIMIT_NPROC, true
	case "RLIMIT_NOFILE":
		return unix.RLIMIT_NOFILE, true
	case "RLIMIT_MEMLOCK":
		return unix.RLIMIT_MEMLOCK, true
	case "RLIMIT_AS":
		return unix.RLIMIT_AS, true
	case "RLIMIT_LOCKS":
		return unix.RLIMIT_LOCKS, true
	case "RLIMIT_SIGPENDING":
		return unix.RLIMIT_SIGPENDING, true
	case "RLIMIT_MSGQUEUE":
		return unix.RLIMIT_MSGQUEUE, true
	case "RLIMIT_NICE":
		return unix.RLIMIT_NICE, true
	case "RLIMIT_RTPRIO":
		return unix.RLIMIT_RTPRIO, true
	case "RLIMIT_RTTIME":
		return unix.RLIMIT_RTTIME, true
	}
	return 0, false
}
