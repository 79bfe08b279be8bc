package wire

import (
	"errors"
	"strings"
	"time"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// ConfigFile is the name of the shim's own options file in the bundle
// directory, next to the OCI spec (config.json) that the engine writes.
const ConfigFile = "shim.json"

// SpecFile is the OCI runtime spec in the bundle directory.
const SpecFile = "config.json"

// Status is the state of a shim's container.
type Status string

// A container is created (init waits for Start), running, or stopped.
const (
	StatusCreated Status = "created"
	StatusRunning Status = "running"
	StatusStopped Status = "stopped"
)

// Config is the shim's options file (shim.json), written by Create.
type Config struct {
	ID          string           `json:"id"`
	StateDir    string           `json:"stateDir"`
	SocketPath  string           `json:"socketPath"`
	LogPath     string           `json:"logPath"`
	LogRotation jsonlog.Rotation `json:"logRotation,omitempty"`
	// LogAttrs are the attributes each line of the log carries (json-file's
	// labels and env options).
	LogAttrs  map[string]string `json:"logAttrs,omitempty"`
	ExitFile  string            `json:"exitFile"`
	Tty       bool              `json:"tty,omitempty"`
	OpenStdin bool              `json:"openStdin,omitempty"`
	StdinOnce bool              `json:"stdinOnce,omitempty"`
	Height    uint16            `json:"height,omitempty"`
	Width     uint16            `json:"width,omitempty"`
	Debug     bool              `json:"debug,omitempty"`
	// RuntimeBinary is hutch-runtime, which the shim starts for every step
	// that needs libcontainer.
	RuntimeBinary string `json:"runtimeBinary"`
	// RuntimeServer is the socket of the engine's runtime server
	// ("hutch-runtime serve"), which the shim asks instead when it is
	// set; the processes it makes are the server's children.
	RuntimeServer string `json:"runtimeServer,omitempty"`
}

// ExitStatus is how a container ended. Death by signal N is 128+N, as in
// Docker.
type ExitStatus struct {
	ExitCode   int
	OOMKilled  bool
	StartedAt  time.Time `json:",omitzero"`
	FinishedAt time.Time
	Error      string
}

// State is what a shim reports about its container.
type State struct {
	ID  string
	Pid int
	// ShimPid is the shim's own pid, for the engine's liveness checks and
	// for measuring it.
	ShimPid   int
	Status    Status
	StartedAt time.Time   `json:",omitzero"`
	Exit      *ExitStatus `json:",omitempty"`
	// ExitFile is where the shim writes Exit before it exits; Wait falls
	// back to it when the shim is gone.
	ExitFile  string
	Tty       bool
	OpenStdin bool
}

// ExecState is what a shim reports about one exec process.
type ExecState struct {
	ID       string
	Pid      int
	Running  bool
	ExitCode int
}

// StartError is a failure to create or start the container's process, with
// the exit code Docker records for it: 127 when the command does not exist,
// 126 when it cannot be invoked, 128 otherwise. It unwraps to
// errdefs.ErrInvalidArgument for the first two (Docker answers 400) and to
// errdefs.ErrUnknown otherwise (500).
type StartError struct {
	Msg      string
	ExitCode int
}

func (e *StartError) Error() string { return "OCI runtime create failed: " + e.Msg }

func (e *StartError) Unwrap() error {
	if e.ExitCode == 126 || e.ExitCode == 127 {
		return errdefs.ErrInvalidArgument
	}
	return errdefs.ErrUnknown
}

// NewStartError classes a libcontainer start error message the way Docker
// does (daemon/errors.go), by looking for the errno text in it, in
// Docker's order: a command that cannot be invoked is 126, a directory
// too (Go's exec says "is a directory" there, where Docker adds
// "permission denied" for the CLI, which looks for it); a bind mount of
// a file on a directory and a command not found are 127; anything else
// is 128.
func NewStartError(msg string) *StartError {
	l := strings.ToLower(msg)
	code := 128
	switch {
	case strings.Contains(l, "permission denied"):
		code = 126
	case strings.Contains(l, "is a directory"):
		msg += ": permission denied"
		code = 126
	case strings.Contains(l, "not a directory"):
		msg += ": Are you trying to mount a directory onto a file (or vice-versa)? Check if the specified host path exists and is the expected type"
		code = 127
	case strings.Contains(l, "executable file not found"),
		strings.Contains(l, "no such file or directory"),
		strings.Contains(l, "system cannot find the file specified"):
		code = 127
	}
	return &StartError{Msg: msg, ExitCode: code}
}

// errClass names an errdefs class on the wire so that the client rebuilds
// the same class.
func errClass(err error) string {
	var se *StartError
	switch {
	case errors.As(err, &se):
		return "start"
	case errdefs.IsNotFound(err):
		return "notfound"
	case errdefs.IsInvalidArgument(err):
		return "invalid"
	case errdefs.IsConflict(err):
		return "conflict"
	case errdefs.IsFailedPrecondition(err):
		return "precondition"
	case errdefs.IsNotImplemented(err):
		return "notimplemented"
	case errdefs.IsUnavailable(err):
		return "unavailable"
	case errdefs.IsAlreadyExists(err):
		return "exists"
	}
	return ""
}

func classErr(class, msg string, code int) error {
	var c error
	switch class {
	case "start":
		return &StartError{Msg: msg, ExitCode: code}
	case "notfound":
		c = errdefs.ErrNotFound
	case "invalid":
		c = errdefs.ErrInvalidArgument
	case "conflict":
		c = errdefs.ErrConflict
	case "precondition":
		c = errdefs.ErrFailedPrecondition
	case "notimplemented":
		c = errdefs.ErrNotImplemented
	case "unavailable":
		c = errdefs.ErrUnavailable
	case "exists":
		c = errdefs.ErrAlreadyExists
	default:
		return errors.New(msg)
	}
	return &remoteError{msg: msg, class: c}
}

// remoteError keeps the shim's message verbatim while carrying its class.
type remoteError struct {
	msg   string
	class error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.class }
