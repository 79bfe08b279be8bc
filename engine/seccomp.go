package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/hutch-engine/hutch/engine/spec"
	"golang.org/x/sys/unix"
)

// seccompDefault is the daemon's default seccomp profile.
type seccompDefault struct {
	// name is what /info shows: spec.SeccompBuiltin, spec.SeccompUnconfined
	// or the path of a custom profile, as Docker shows them.
	name string
	// profile is what spec.Input.SeccompProfile takes.
	profile string
	// off: the kernel has no seccomp filters (no CONFIG_SECCOMP_FILTER),
	// so no container gets one and /info claims none, as in Docker.
	off bool
}

// loadSeccompDefault resolves daemon.json's seccomp-profile: "" or
// "builtin" is Docker's default profile, "unconfined" none, anything else
// the path of a profile in Docker's JSON format, read and checked once,
// here, as Docker reads it at its start.
func loadSeccompDefault(setting string) (seccompDefault, error) {
	d := seccompDefault{name: spec.SeccompBuiltin, off: !kernelSeccomp()}
	switch setting {
	case "", spec.SeccompBuiltin:
		return d, nil
	case spec.SeccompUnconfined:
		d.name, d.profile = spec.SeccompUnconfined, spec.SeccompUnconfined
		return d, nil
	}
	b, err := os.ReadFile(setting)
	if err != nil {
		return d, fmt.Errorf("opening seccomp profile (%s) failed: %w", setting, err)
	}
	if _, err := spec.LoadSeccompProfile(string(b), nil); err != nil {
		return d, fmt.Errorf("seccomp profile %s: %w", setting, err)
	}
	d.name, d.profile = setting, string(b)
	return d, nil
}

// input sets the daemon's default in a spec.Input.
func (d seccompDefault) input(in *spec.Input) {
	in.SeccompProfile, in.NoSeccomp = d.profile, d.off
}

// kernelSeccomp reports whether the kernel filters system calls:
// PR_GET_SECCOMP fails with EINVAL without CONFIG_SECCOMP, as Docker's
// sysinfo checks; CONFIG_SECCOMP_FILTER then comes with it on every
// kernel that supports user namespaces in practice.
func kernelSeccomp() bool {
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return !errors.Is(err, unix.EINVAL)
}
