package apiserver

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/containerd/errdefs"
)

// hutch has no checkpoint and restore (Docker's experimental CRIU
// support). Its endpoints answer as dockerd does with experimental
// features off: the checkpoint routes are NotImplemented (501), and a
// start that names a checkpoint is refused (400) once the name is
// checked, so that a name that could climb out of the checkpoint
// directory gets Docker's own answer whether or not the container exists.
var (
	errNoCheckpoints = errdefs.ErrNotImplemented.WithMessage("hutch does not support checkpoints (Docker's experimental checkpoint and restore)")
	errNoRestore     = errdefs.ErrInvalidArgument.WithMessage("checkpoint is only supported in experimental mode, which hutch does not have")
)

func checkpointsUnsupported(http.ResponseWriter, *http.Request) error { return errNoCheckpoints }

// checkpointChars are the characters of a checkpoint name, as Docker's
// (its names.RestrictedNameChars): a name is one path element, never "."
// or "..".
const checkpointChars = `[a-zA-Z0-9][a-zA-Z0-9_.-]`

var checkpointName = regexp.MustCompile(`^` + checkpointChars + `+$`)

// startCheckpoint refuses the checkpoint parameter of a container start:
// a malformed name with Docker's message, any other because hutch cannot
// restore one.
func startCheckpoint(r *http.Request) error {
	id := r.URL.Query().Get("checkpoint")
	switch {
	case id == "":
		return nil
	case !checkpointName.MatchString(id) || strings.HasSuffix(id, "."):
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid checkpoint ID %q, only %s are allowed", id, checkpointChars))
	default:
		return errNoRestore
	}
}
