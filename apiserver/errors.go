package apiserver

import (
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/common"
)

// errorStatus is the one place where an error becomes an HTTP status. It
// follows the class of the error (github.com/containerd/errdefs, found through
// %w wrapping) the way dockerd does; unclassed errors are 500.
func errorStatus(err error) int {
	// Resolve picks the class of the outermost classed error, so that a
	// handler may re-class an error it wraps.
	err = errdefs.Resolve(err)
	switch {
	case errdefs.IsNotFound(err):
		return http.StatusNotFound
	case errdefs.IsInvalidArgument(err), errdefs.IsFailedPrecondition(err), errdefs.IsOutOfRange(err):
		return http.StatusBadRequest
	case errdefs.IsConflict(err), errdefs.IsAlreadyExists(err), errdefs.IsAborted(err):
		return http.StatusConflict
	case errdefs.IsNotModified(err):
		return http.StatusNotModified
	case errdefs.IsUnauthorized(err):
		return http.StatusUnauthorized
	case errdefs.IsPermissionDenied(err):
		return http.StatusForbidden
	case errdefs.IsResourceExhausted(err):
		return http.StatusTooManyRequests
	case errdefs.IsUnavailable(err):
		return http.StatusServiceUnavailable
	case errdefs.IsNotImplemented(err):
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

// httpError writes err as Docker does: the status from its class and a body
// {"message": err.Error()}. For Docker's exact wording of a message, class it
// with WithMessage, e.g. errdefs.ErrNotFound.WithMessage("No such image: x").
// A 304 has no body, by HTTP's rules.
func httpError(w http.ResponseWriter, err error) {
	status := errorStatus(err)
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	_ = writeJSON(w, status, &common.ErrorResponse{Message: err.Error()})
}

// notFound answers paths and methods no route serves, with Docker's body.
func notFound(w http.ResponseWriter, _ *http.Request) {
	httpError(w, errdefs.ErrNotFound.WithMessage("page not found"))
}
