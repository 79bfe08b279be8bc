package spec

import (
	"fmt"
	"slices"
	"strings"

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
