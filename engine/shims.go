package engine

import (
	"context"
	"syscall"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// shimConn is what the engine asks of one container's shim (a
// shim.Client): the container lifecycle depends on this, not on the
// socket protocol, so that its unit tests run it against a fake shim.
type shimConn interface {
	Pid() int
	State(ctx context.Context) (wire.State, error)
	Start(ctx context.Context) error
	Kill(ctx context.Context, sig syscall.Signal) error
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Resize(ctx context.Context, height, width uint16) error
	ResizeExec(ctx context.Context, execID string, height, width uint16) error
	// Wait blocks until the container has exited and returns its status.
	Wait(ctx context.Context) (wire.ExitStatus, error)
	Attach(ctx context.Context, opts shim.AttachOptions) (*shim.Attachment, error)
	Exec(ctx context.Context, opts shim.ExecOptions) (wire.ExitStatus, error)
	WaitExec(ctx context.Context, execID string) (wire.ExecState, error)
	ExecState(ctx context.Context, execID string) (wire.ExecState, error)
}

// shimHost makes, finds and cleans up after shims: package shim's Create,
// Connect and Delete in the daemon (realShims), a fake in unit tests.
type shimHost interface {
	// Create spawns a shim with the container created, not started.
	Create(ctx context.Context, opts shim.StartOptions) (shimConn, error)
	// Connect reaches a running shim (shim.ErrNoShim when none answers).
	Connect(ctx context.Context, socket string) (shimConn, error)
	// Delete removes the runtime's state of a container whose shim is
	// gone.
	Delete(ctx context.Context, runtimeBinary, bundleDir string) error
}

// realShims is package shim.
type realShims struct{}

func (realShims) Create(ctx context.Context, opts shim.StartOptions) (shimConn, error) {
	c, err := shim.Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (realShims) Connect(ctx context.Context, socket string) (shimConn, error) {
	c, err := shim.Connect(ctx, socket)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (realShims) Delete(ctx context.Context, runtimeBinary, bundleDir string) error {
	return shim.Delete(ctx, runtimeBinary, bundleDir)
}
