package spec

import (
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// seccompFilter sets the spec's filter with Docker's rules
// (daemon/seccomp_linux.go): --security-opt seccomp=unconfined has none; a
// profile given with --security-opt applies, privileged or not; otherwise a
// privileged container has none and the others get the daemon's default.
// The default profile opens the calls it gates on a capability when the
// container's bounding set has it, so it comes after the capabilities.
func (b *builder) seccompFilter() error {
	if b.in.NoSeccomp {
		if opt := b.seccomp; opt != "" && opt != SeccompUnconfined && opt != SeccompBuiltin {
			return fmt.Errorf("seccomp is not enabled in your kernel, cannot run a custom seccomp profile: %w", errdefs.ErrInvalidArgument)
		}
		return nil
	}
	p, err := seccompProfile(b.seccomp, b.in.SeccompProfile, b.hc.Privileged, b.spec)
	if err != nil {
		return err
	}
	b.spec.Linux.Seccomp = p
	return nil
}

// seccompProfile is the filter of a container whose --security-opt
// seccomp= is opt ("" if none), on a daemon whose default is def ("",
// SeccompBuiltin, SeccompUnconfined or a profile's JSON), for spec s whose
// capabilities are set. Errors are errdefs.ErrInvalidArgument.
func seccompProfile(opt, def string, privileged bool, s *specs.Spec) (*specs.LinuxSeccomp, error) {
	switch {
	case opt == SeccompUnconfined:
		return nil, nil
	case opt == SeccompBuiltin:
		return builtinProfile(s)
	case opt != "":
		return LoadSeccompProfile(opt, s)
	case privileged, def == SeccompUnconfined:
		return nil, nil
	case def == "", def == SeccompBuiltin:
		return builtinProfile(s)
	}
	return LoadSeccompProfile(def, s)
}

func builtinProfile(s *specs.Spec) (*specs.LinuxSeccomp, error) {
	p, err := seccomp.GetDefaultProfile(s)
	if err != nil {
		return nil, fmt.Errorf("seccomp default profile: %w", err)
	}
	return p, nil
}

// LoadSeccompProfile reads a profile in Docker's JSON format (conditions on
// capabilities, architectures and kernel versions included) and returns the
// OCI filter for spec s, whose process capabilities are set: the rules of
// the profile whose conditions s and this host meet. A profile that runc
// would refuse when the container starts is refused here, with
// errdefs.ErrInvalidArgument; an empty one ({}) is no filter, as in Docker.
func LoadSeccompProfile(body string, s *specs.Spec) (*specs.LinuxSeccomp, error) {
	if s == nil || s.Process == nil || s.Process.Capabilities == nil {
		// The profile's conditions on capabilities read the bounding set.
		s = &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{}}}
	}
	p, err := seccomp.LoadProfile(body, s)
	if err != nil {
		// LoadProfile's own words ("Decoding seccomp profile failed: …").
		return nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	if err := checkSeccomp(p); err != nil {
		return nil, fmt.Errorf("invalid seccomp profile: %w: %w", err, errdefs.ErrInvalidArgument)
	}
	return p, nil
}

// CheckSeccomp refuses, at create, the container whose --security-opt
// seccomp= profile cannot be loaded, so that a bad profile is a 400 that
// makes nothing rather than a failed start. (The daemon's default profile
// is checked when the engine starts.)
func CheckSeccomp(hc *container.HostConfig) error {
	opt := ""
	for _, o := range hc.SecurityOpt {
		if k, v, ok := cutSecurityOpt(o); ok && k == "seccomp" {
			opt = v
		}
	}
	if opt == "" || opt == SeccompBuiltin || opt == SeccompUnconfined {
		return nil
	}
	bounding, err := hostCaps().capabilities(hc.CapAdd, hc.CapDrop, hc.Privileged)
	if err != nil {
		// A capability error is the start's to report, in its own words.
		bounding = nil
	}
	s := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: bounding}}}
	_, err = LoadSeccompProfile(opt, s)
	return err
}
