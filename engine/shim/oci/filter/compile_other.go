//go:build !(linux && cgo && seccomp)

package filter

import (
	"errors"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Compile needs libseccomp: hutch-runtime is built with cgo and the
// seccomp tag (make build).
func Compile(s *specs.LinuxSeccomp) (*Program, error) {
	if s == nil || (s.DefaultAction == "" && len(s.Syscalls) == 0) {
		return nil, nil
	}
	return nil, errors.New("seccomp filters need a hutch-runtime built with libseccomp (the seccomp build tag)")
}
