package shim

import (
	"fmt"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// ErrNoShim reports that no shim answers on a socket: it has exited (read the
// exit file) or was never started.
var ErrNoShim = fmt.Errorf("shim not running: %w", errdefs.ErrUnavailable)

// StartOptions says which container a new shim runs and where its files go.
// Every path must be absolute.
type StartOptions struct {
	// ID is the container id; it names the libcontainer state and cgroup.
	ID string
	// BundleDir holds config.json (OCI runtime spec; root.path is the
	// absolute, already mounted rootfs). The shim writes shim.json and its
	// own diagnostic log shim.log there.
	BundleDir string
	// StateDir is libcontainer's state root. It must not be nested with the
	// directory of RuntimeBinary: libcontainer seals /proc/self/exe with an
	// overlayfs whose lower layers are both directories, and overlapping
	// layers make it fall back to copying the binary into a memfd on every
	// start (docs/design.md, Platform constraints).
	StateDir string
	// SocketPath is where the shim listens for attach/resize/kill/wait/exec.
	SocketPath string
	// LogPath receives the container's output in Docker's json-file format
	// ("": kept nowhere, --log-driver none).
	LogPath string
	// LogRotation is the json-file max-size/max-file.
	LogRotation jsonlog.Rotation
	// LogAttrs are the attributes every line of the log carries.
	LogAttrs map[string]string
	// ExitFile receives the exit status (JSON, written atomically) before
	// the shim exits.
	ExitFile string

	Tty       bool
	OpenStdin bool
	// StdinOnce closes the container's stdin when the first attached
	// client that sent stdin ends it (docker run -i).
	StdinOnce bool
	// ConsoleHeight and ConsoleWidth are the initial tty size.
	ConsoleHeight, ConsoleWidth uint16

	// ShimBinary is the hutch-shim executable.
	ShimBinary string
	// RuntimeBinary is hutch-runtime, the libcontainer side: the shim
	// starts it to create the container, for each exec, pause and resume,
	// and to delete the container; libcontainer re-executes it as the
	// container's init.
	RuntimeBinary string
	// RuntimeServer is the socket of the engine's runtime server
	// (RuntimeServer), which the shim asks instead of starting
	// RuntimeBinary; "" for a shim that starts it itself.
	RuntimeServer string
	// Debug makes the shim log at debug level to shim.log, and so
	// libcontainer in a hutch-runtime the shim starts itself (the runtime
	// server logs to runtime.log at the engine's level).
	Debug bool
}
