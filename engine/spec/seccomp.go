package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// The seccomp profiles named rather than given: the values of
// --security-opt seccomp= and of daemon.json's seccomp-profile that are not
// a profile.
const (
	// SeccompBuiltin is Docker's default profile (moby/profiles/seccomp).
	SeccompBuiltin = "builtin"
	// SeccompUnconfined is no filter at all.
	SeccompUnconfined = "unconfined"
)

// seccompFilter sets the spec's filter with Docker's rules
// (daemon/seccomp_linux.go): --security-opt seccomp=unconfined has none; a
// profile given with --security-opt applies, privileged or not; otherwise a
// privileged container has none and the others get the daemon's default.
// The default profile opens the calls it gates on a capability when the
// container's bounding set has it, so it comes after the capabilities.
func (b *builder) seccompFilter() error {
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

// cutSecurityOpt splits a --security-opt as Docker does: key=value, or the
// older key:value.
func cutSecurityOpt(opt string) (k, v string, ok bool) {
	if k, v, ok = strings.Cut(opt, "="); ok {
		return k, v, true
	}
	return strings.Cut(opt, ":")
}

// Seccomp's names, as libseccomp and runc spell them.
var (
	seccompActions = []specs.LinuxSeccompAction{
		specs.ActKill, specs.ActKillProcess, specs.ActKillThread, specs.ActTrap,
		specs.ActErrno, specs.ActTrace, specs.ActAllow, specs.ActLog,
	}
	seccompOps = []specs.LinuxSeccompOperator{
		specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual, specs.OpEqualTo,
		specs.OpGreaterEqual, specs.OpGreaterThan, specs.OpMaskedEqual,
	}
	seccompArches = []specs.Arch{
		specs.ArchX86, specs.ArchX86_64, specs.ArchX32, specs.ArchARM, specs.ArchAARCH64,
		specs.ArchMIPS, specs.ArchMIPS64, specs.ArchMIPS64N32, specs.ArchMIPSEL,
		specs.ArchMIPSEL64, specs.ArchMIPSEL64N32, specs.ArchPPC, specs.ArchPPC64,
		specs.ArchPPC64LE, specs.ArchS390, specs.ArchS390X, specs.ArchRISCV64,
		specs.ArchLOONGARCH64,
	}
	seccompFlags = []specs.LinuxSeccompFlag{
		"SECCOMP_FILTER_FLAG_TSYNC", specs.LinuxSeccompFlagLog,
		specs.LinuxSeccompFlagSpecAllow, specs.LinuxSeccompFlagWaitKillableRecv,
	}
)

// maxSyscallArgs: a system call has at most six arguments.
const maxSyscallArgs = 6

// checkSeccomp refuses what runc would refuse (or trip on) when it
// installs the filter in the container's init: unknown actions, operators,
// architectures and flags, rules without a name, argument indexes past the
// sixth. SCMP_ACT_NOTIFY needs a listener, which the engine does not run.
func checkSeccomp(p *specs.LinuxSeccomp) error {
	if p == nil {
		return nil
	}
	if !slices.Contains(seccompActions, p.DefaultAction) {
		return fmt.Errorf("defaultAction %q is not a supported action", p.DefaultAction)
	}
	for _, a := range p.Architectures {
		if !slices.Contains(seccompArches, a) {
			return fmt.Errorf("architecture %q is not known", a)
		}
	}
	for _, f := range p.Flags {
		if !slices.Contains(seccompFlags, f) {
			return fmt.Errorf("flag %q is not known", f)
		}
	}
	if p.ListenerPath != "" {
		return fmt.Errorf("listenerPath: seccomp notification is not supported")
	}
	for _, call := range p.Syscalls {
		if !slices.Contains(seccompActions, call.Action) {
			return fmt.Errorf("action %q of %v is not a supported action", call.Action, call.Names)
		}
		if len(call.Names) == 0 {
			return fmt.Errorf("a rule with action %s names no system call", call.Action)
		}
		for _, n := range call.Names {
			if n == "" {
				return fmt.Errorf("a rule with action %s has an empty system call name", call.Action)
			}
		}
		for _, a := range call.Args {
			if a.Index >= maxSyscallArgs {
				return fmt.Errorf("argument index %d of %v: system calls have %d arguments", a.Index, call.Names, maxSyscallArgs)
			}
			if !slices.Contains(seccompOps, a.Op) {
				return fmt.Errorf("operator %q of %v is not known", a.Op, call.Names)
			}
		}
	}
	return nil
}
