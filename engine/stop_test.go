package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim"
)

// A signal that finds the process gone (the shim says it exited, or is
// gone itself) is no failure of a stop or kill; any other error is.
func TestSignalMissed(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"shim gone", fmt.Errorf("/run/s/x.sock: %w", shim.ErrNoShim), true},
		{"process exited", errdefs.ErrConflict.WithMessage("container x is not running"), true},
		{"not modified", errdefs.ErrNotModified, true},
		{"bad signal", errdefs.ErrInvalidArgument.WithMessage("invalid signal 99"), false},
		{"signal refused", errors.New("signal 15 to the container: operation not permitted"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := signalMissed(tc.err); got != tc.want {
				t.Errorf("signalMissed(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
