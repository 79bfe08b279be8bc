//go:build linux && cgo && seccomp

package filter

import (
	"errors"
	"fmt"
	_ "unsafe" // go:linkname

	"github.com/opencontainers/runc/libcontainer/configs"
	_ "github.com/opencontainers/runc/libcontainer/seccomp" // the functions linked below
	_ "github.com/opencontainers/runc/libcontainer/seccomp/patchbpf"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// runc's own steps of InitSeccomp (libcontainer/seccomp) and PatchAndLoad
// (seccomp/patchbpf), short of the load, so that the program is the one
// runc v1.5 would install. TestRuncSignatures checks them against the
// module's source.

//go:linkname getAction github.com/opencontainers/runc/libcontainer/seccomp.getAction
func getAction(act configs.Action, errnoRet *uint) (libseccomp.ScmpAction, error)

//go:linkname setFlag github.com/opencontainers/runc/libcontainer/seccomp.setFlag
func setFlag(filter *libseccomp.ScmpFilter, flag specs.LinuxSeccompFlag) error

//go:linkname matchCall github.com/opencontainers/runc/libcontainer/seccomp.matchCall
func matchCall(filter *libseccomp.ScmpFilter, call *configs.Syscall, defAct libseccomp.ScmpAction) error

//go:linkname enosysPatchFilter github.com/opencontainers/runc/libcontainer/seccomp/patchbpf.enosysPatchFilter
func enosysPatchFilter(config *configs.Seccomp, filter *libseccomp.ScmpFilter) ([]unix.SockFilter, error)

//go:linkname filterFlags github.com/opencontainers/runc/libcontainer/seccomp/patchbpf.filterFlags
func filterFlags(config *configs.Seccomp, filter *libseccomp.ScmpFilter) (flags uint, noNewPrivs bool, err error)

// Compile turns an OCI profile into the program runc would load: its
// conversion (specconv.SetupSeccomp: SECCOMP_FILTER_FLAG_SPEC_ALLOW unless
// the profile names flags), libseccomp's rules and runc's -ENOSYS stub for
// calls newer than the profile. nil for a profile that is no filter.
func Compile(s *specs.LinuxSeccomp) (*Program, error) {
	cfg, err := specconv.SetupSeccomp(s)
	if err != nil || cfg == nil {
		return nil, err
	}
	if cfg.ListenerPath != "" || cfg.DefaultAction == configs.Notify {
		return nil, errors.New("seccomp notification is not supported")
	}
	for _, call := range cfg.Syscalls {
		if call.Action == configs.Notify {
			return nil, errors.New("seccomp notification is not supported")
		}
	}
	defAct, err := getAction(cfg.DefaultAction, cfg.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("seccomp default action: %w", err)
	}
	f, err := libseccomp.NewFilter(defAct)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer f.Release()
	for _, arch := range cfg.Architectures {
		a, err := libseccomp.GetArchFromString(arch)
		if err != nil {
			return nil, fmt.Errorf("seccomp architecture %q: %w", arch, err)
		}
		if err := f.AddArch(a); err != nil {
			return nil, fmt.Errorf("seccomp architecture %q: %w", arch, err)
		}
	}
	for _, flag := range cfg.Flags {
		if err := setFlag(f, flag); err != nil {
			return nil, err
		}
	}
	if len(cfg.Syscalls) > 32 {
		// runc's choice: libseccomp's binary tree for long rule sets
		// (libseccomp 2.5 misbehaves with it on none).
		_ = f.SetOptimize(2)
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	for _, call := range cfg.Syscalls {
		if err := matchCall(f, call, defAct); err != nil {
			return nil, err
		}
	}
	insns, err := enosysPatchFilter(cfg, f)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	flags, _, err := filterFlags(cfg, f)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter flags: %w", err)
	}
	if len(insns) == 0 || len(insns) > maxInsns {
		return nil, fmt.Errorf("seccomp filter of %d instructions (at most %d)", len(insns), maxInsns)
	}
	return &Program{Flags: uint32(flags), Insns: insns}, nil
}
