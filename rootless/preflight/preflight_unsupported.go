//go:build !linux

package preflight

import (
	"context"
	"fmt"
	"runtime"

	"github.com/containerd/errdefs"
)

// DefaultEnv describes the running process; only Linux has anything to check.
func DefaultEnv() Env { return Env{} }

// RealRoot is false: hutch runs on Linux only.
func RealRoot() bool { return false }

// ResolveRuntimeDir fails: hutch runs on Linux only.
func ResolveRuntimeDir(Env) (dir, source string, err error) {
	return "", "", fmt.Errorf("hutch runs on Linux, not %s: %w", runtime.GOOS, errdefs.ErrNotImplemented)
}

func checkFuncs() []checkFunc {
	return []checkFunc{func(context.Context, *Env) []Item {
		return []Item{{Check: CheckUserNS, Name: "operating system", Status: Missing, Required: true,
			Detail: "hutch needs Linux user namespaces, and this is " + runtime.GOOS, Fix: "run hutch on Linux"}}
	}}
}
