package apiserver

import (
	"errors"
	"net/http"
	"strings"

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
// {"message": errorMessage(err)}. For Docker's exact wording of a message, class it
// with WithMessage, e.g. errdefs.ErrNotFound.WithMessage("No such image: x").
// A 304 has no body, by HTTP's rules.
func httpError(w http.ResponseWriter, err error) {
	status := errorStatus(err)
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	_ = writeJSON(w, status, &common.ErrorResponse{Message: errorMessage(err)})
}

// classes are the errdefs sentinels whose text a classed error's message
// may end with.
var classes = []error{
	errdefs.ErrInvalidArgument, errdefs.ErrNotFound, errdefs.ErrAlreadyExists,
	errdefs.ErrFailedPrecondition, errdefs.ErrConflict, errdefs.ErrNotModified,
	errdefs.ErrPermissionDenied, errdefs.ErrResourceExhausted, errdefs.ErrUnavailable,
	errdefs.ErrNotImplemented, errdefs.ErrUnauthenticated, errdefs.ErrAborted, errdefs.ErrOutOfRange,
}

// errorMessage is the message Docker's client shows for err: its text
// without the ": invalid argument" (or other class name) that classing
// it with fmt.Errorf("…: %w", errdefs.ErrInvalidArgument) put at its end.
// Docker's daemon classes errors by wrapping them in types that add no
// text: "invalid mode: zz", not "invalid mode: zz: invalid argument".
func errorMessage(err error) string {
	msg := err.Error()
	for _, c := range classes {
		if suffix := ": " + c.Error(); strings.HasSuffix(msg, suffix) && errors.Is(err, c) {
			return strings.TrimSuffix(msg, suffix)
		}
	}
	return msg
}

// notFound answers paths and methods no route serves, with Docker's body.
func notFound(w http.ResponseWriter, _ *http.Request) {
	httpError(w, errdefs.ErrNotFound.WithMessage("page not found"))
}

// invalidVerbatim is a bad parameter whose message Docker sends exactly as
// its parser wrote it, a trailing ": invalid argument" included (errors of
// containerd's platforms package, which classes them with its own
// sentinel). It is classed by its InvalidParameter method, which errdefs
// reads as Docker's own error types, so errorMessage leaves its text alone.
type invalidVerbatim struct{ err error }

func (e invalidVerbatim) Error() string     { return e.err.Error() }
func (e invalidVerbatim) Unwrap() error     { return e.err }
func (e invalidVerbatim) InvalidParameter() {}
