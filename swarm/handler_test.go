package swarm

import (
	"errors"
	"net/http"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SwarmKit's gRPC codes get Docker's statuses; errdefs classes theirs.
func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{status.Error(codes.InvalidArgument, "x"), http.StatusBadRequest},
		{status.Error(codes.FailedPrecondition, "x"), http.StatusBadRequest},
		{status.Error(codes.NotFound, "x"), http.StatusNotFound},
		{status.Error(codes.AlreadyExists, "x"), http.StatusConflict},
		{status.Error(codes.Unavailable, "x"), http.StatusServiceUnavailable},
		{status.Error(codes.Internal, "x"), http.StatusInternalServerError},
		{errdefs.ErrInvalidArgument.WithMessage("x"), http.StatusBadRequest},
		{errNoSwarm, http.StatusServiceUnavailable},
		{errSwarmNotLocked, http.StatusConflict},
		{errors.New("x"), http.StatusInternalServerError},
	} {
		if got := statusOf(tc.err); got != tc.want {
			t.Errorf("statusOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if m := errMessage(status.Error(codes.AlreadyExists, "name conflicts")); m != "rpc error: code = AlreadyExists desc = name conflicts" {
		t.Errorf("a gRPC error's message: %q", m)
	}
	if m := errMessage(errNoSwarm); m != "This node is not part of a swarm" {
		t.Errorf("a classed error's message: %q", m)
	}
}
