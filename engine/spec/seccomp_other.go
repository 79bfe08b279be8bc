//go:build !linux

package spec

import (
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// seccompFilter: seccomp is Linux's.
func (b *builder) seccompFilter() error { return nil }

// LoadSeccompProfile: seccomp is Linux's.
func LoadSeccompProfile(string, *specs.Spec) (*specs.LinuxSeccomp, error) {
	return nil, fmt.Errorf("seccomp profiles: %w", errdefs.ErrNotImplemented)
}

// CheckSeccomp: seccomp is Linux's.
func CheckSeccomp(*container.HostConfig) error { return nil }
