package shim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// Client talks to one shim over its socket. It holds no connection between
// calls, so it survives nothing and needs no closing; after an engine
// restart Connect makes a new one.
type Client struct {
	socket   string
	exitFile string
	pid      int
}

// Connect reaches the shim listening on socketPath. A shim that is gone is
// ErrNoShim (errdefs.ErrUnavailable): read its exit file with ReadExit.
func Connect(ctx context.Context, socketPath string) (*Client, error) {
	c := &Client{socket: socketPath}
	st, err := c.State(ctx)
	if err != nil {
		return nil, err
	}
	c.exitFile, c.pid = st.ExitFile, st.Pid
	return c, nil
}

// Pid is the container's init pid (in the shim's pid namespace).
func (c *Client) Pid() int { return c.pid }

// SocketPath is the shim's socket.
func (c *Client) SocketPath() string { return c.socket }

// dial opens a connection, sends req and reads the response line. The
// connection is closed when ctx ends.
func (c *Client) dial(ctx context.Context, req *wire.Request) (net.Conn, *bufio.Reader, *wire.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, nil, nil, fmt.Errorf("%s: %w", c.socket, ErrNoShim)
		}
		return nil, nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	fail := func(err error) (net.Conn, *bufio.Reader, *wire.Response, error) {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, nil, nil, ctx.Err()
		}
		return nil, nil, nil, err
	}
	if err := wire.WriteJSONLine(conn, req); err != nil {
		if errors.Is(err, wire.ErrLineTooLong) {
			return fail(err)
		}
		return fail(fmt.Errorf("%s: %w", c.socket, ErrNoShim))
	}
	br := bufio.NewReader(conn)
	var resp wire.Response
	if err := wire.ReadJSONLine(br, &resp); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			// The shim exited while answering (its container ended).
			return fail(fmt.Errorf("%s: %w", c.socket, ErrNoShim))
		}
		return fail(err)
	}
	if err := resp.Err(); err != nil {
		return fail(err)
	}
	return &ctxConn{Conn: conn, stop: stop}, br, &resp, nil
}

// ctxConn releases the context watch when closed.
type ctxConn struct {
	net.Conn
	stop func() bool
}

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

func (c *Client) call(ctx context.Context, req *wire.Request) (*wire.Response, error) {
	conn, _, resp, err := c.dial(ctx, req)
	if err != nil {
		return nil, err
	}
	_ = conn.Close()
	return resp, nil
}

// State reports the container's state.
func (c *Client) State(ctx context.Context) (wire.State, error) {
	resp, err := c.call(ctx, &wire.Request{Op: wire.OpState})
	if err != nil {
		return wire.State{}, err
	}
	if resp.State == nil {
		return wire.State{}, errors.New("shim protocol: state missing")
	}
	return *resp.State, nil
}

// Start runs the created container's command. A second Start is
// errdefs.ErrConflict; a command that cannot be executed is a *StartError.
func (c *Client) Start(ctx context.Context) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpStart})
	return err
}

// Kill sends sig to the container's init. A stopped container is
// errdefs.ErrConflict; a gone shim ErrNoShim.
func (c *Client) Kill(ctx context.Context, sig syscall.Signal) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpKill, Signal: int(sig)})
	return err
}

// Pause freezes the container's processes (Resume thaws them) through the
// cgroup freezer; without one it is errdefs.ErrFailedPrecondition.
func (c *Client) Pause(ctx context.Context) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpPause})
	return err
}

// Resume thaws a paused container.
func (c *Client) Resume(ctx context.Context) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpResume})
	return err
}

// Resize sets the size of the container's tty (errdefs.ErrFailedPrecondition
// without one).
func (c *Client) Resize(ctx context.Context, height, width uint16) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpResize, Height: height, Width: width})
	return err
}

// ResizeExec sets the size of an exec process's tty.
func (c *Client) ResizeExec(ctx context.Context, execID string, height, width uint16) error {
	_, err := c.call(ctx, &wire.Request{Op: wire.OpResize, ExecID: execID, Height: height, Width: width})
	return err
}

// Wait blocks until the container has exited and returns its status. When
// the shim is already gone it reads the exit file the shim left.
func (c *Client) Wait(ctx context.Context) (wire.ExitStatus, error) {
	resp, err := c.call(ctx, &wire.Request{Op: wire.OpWait})
	if err == nil && resp.Exit != nil {
		return *resp.Exit, nil
	}
	if err != nil && !errors.Is(err, ErrNoShim) {
		return wire.ExitStatus{}, err
	}
	if c.exitFile == "" {
		return wire.ExitStatus{}, fmt.Errorf("%s: exit status unknown: %w", c.socket, ErrNoShim)
	}
	st, rerr := wire.ReadExit(c.exitFile)
	if errdefs.IsNotFound(rerr) {
		// Gone without a status: it was killed.
		return wire.ExitStatus{}, fmt.Errorf("%s: died without recording an exit status: %w", c.socket, ErrNoShim)
	}
	return st, rerr
}

// AttachOptions selects the streams of an attachment: a nil writer is a
// stream not wanted, a nil Stdin sends nothing. Stdin is read until it
// returns an error or EOF, also after the attachment has ended: close its
// source (the hijacked connection) when done.
type AttachOptions struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Attachment is a registered attach; output produced from now on reaches
// it.
type Attachment struct {
	conn  net.Conn
	br    *bufio.Reader
	opts  AttachOptions
	done  chan struct{}
	err   error
	stdin chan struct{}
}

// Attach registers with the shim and returns once registered, so that a
// Start issued after it loses no output (docker run: attach, then start).
// The streams are copied in the background until the container's output
// ends; Wait returns then. Stdin is copied until it ends (an EOF closes the
// container's stdin when it was created with StdinOnce). Cancelling ctx or
// calling Close detaches.
func (c *Client) Attach(ctx context.Context, opts AttachOptions) (*Attachment, error) {
	conn, br, _, err := c.dial(ctx, &wire.Request{
		Op: wire.OpAttach, Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil,
	})
	if err != nil {
		return nil, err
	}
	a := &Attachment{conn: conn, br: br, opts: opts, done: make(chan struct{}), stdin: make(chan struct{})}
	go a.copyOut(nil)
	go a.copyIn()
	return a, nil
}

// Wait blocks until the output has ended (nil) or the connection failed.
func (a *Attachment) Wait() error {
	<-a.done
	return a.err
}

// Done is closed when the output has ended.
func (a *Attachment) Done() <-chan struct{} { return a.done }

// Close detaches.
func (a *Attachment) Close() error { return a.conn.Close() }

// copyOut demultiplexes frames until the shim closes the connection. An
// exit frame, sent only for exec, is decoded into exit.
func (a *Attachment) copyOut(exit *wire.ExitStatus) {
	defer close(a.done)
	var buf []byte
	for {
		stream, p, err := wire.ReadFrame(a.br, buf)
		if err != nil {
			// The shim closes the connection when the output has ended.
			// Stdin it had not read yet (the last frames, or the end of
			// stdin) makes that close a reset, after the output, which
			// arrives whole before it.
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
				a.err = err
			}
			return
		}
		buf = p[:0]
		var w io.Writer
		switch stream {
		case wire.StreamStdout:
			w = a.opts.Stdout
		case wire.StreamStderr:
			w = a.opts.Stderr
		case wire.StreamExit:
			if exit != nil {
				if err := json.Unmarshal(p, exit); err != nil {
					a.err = err
				}
			}
			continue
		}
		if w != nil {
			if _, err := w.Write(p); err != nil {
				a.err = err
				_ = a.conn.Close()
				return
			}
		}
	}
}

func (a *Attachment) copyIn() {
	defer close(a.stdin)
	if a.opts.Stdin == nil {
		return
	}
	fw := wire.NewFrameWriter(a.conn)
	buf := make([]byte, 32*1024)
	for {
		n, err := a.opts.Stdin.Read(buf)
		if n > 0 {
			if fw.WriteFrame(wire.StreamStdin, buf[:n]) != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			_ = fw.WriteFrame(wire.StreamStdin, nil)
			return
		}
		if err != nil {
			return
		}
	}
}

// ExecOptions describes a process to run in the running container. The
// engine builds Process (args, env, cwd, user, terminal, capabilities for
// Privileged) as for the container's own process.
type ExecOptions struct {
	ID      string
	Process specs.Process
	// Detach starts the process without streams; Exec returns once it runs.
	Detach         bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Started, if set, is called with the pid once the process runs.
	Started func(pid int)
}

// Exec starts a process in the container and, unless detached, streams it
// until it exits and returns its exit status. A missing executable is a
// *StartError; an exec of a container that is not running is
// errdefs.ErrConflict.
func (c *Client) Exec(ctx context.Context, opts ExecOptions) (wire.ExitStatus, error) {
	p, err := json.Marshal(opts.Process)
	if err != nil {
		return wire.ExitStatus{}, err
	}
	conn, br, resp, err := c.dial(ctx, &wire.Request{
		Op: wire.OpExec, ExecID: opts.ID, Process: p, Tty: opts.Process.Terminal, Detach: opts.Detach,
		Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil, Stderr: opts.Stderr != nil,
	})
	if err != nil {
		return wire.ExitStatus{}, err
	}
	if opts.Started != nil {
		opts.Started(resp.Pid)
	}
	if opts.Detach {
		_ = conn.Close()
		return wire.ExitStatus{}, nil
	}
	a := &Attachment{conn: conn, br: br, opts: AttachOptions{Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr},
		done: make(chan struct{}), stdin: make(chan struct{})}
	exit := wire.ExitStatus{ExitCode: -1}
	go a.copyIn()
	a.copyOut(&exit)
	_ = conn.Close()
	if ctx.Err() != nil {
		return wire.ExitStatus{}, ctx.Err()
	}
	if a.err != nil {
		return wire.ExitStatus{}, a.err
	}
	if exit.ExitCode < 0 {
		return wire.ExitStatus{}, fmt.Errorf("exec %s: stream ended without an exit status: %w", opts.ID, ErrNoShim)
	}
	return exit, nil
}

// WaitExec returns once exec process execID has ended, with its state
// (errdefs.ErrNotFound for an unknown id; ErrNoShim when the shim went
// away first).
func (c *Client) WaitExec(ctx context.Context, execID string) (wire.ExecState, error) {
	resp, err := c.call(ctx, &wire.Request{Op: wire.OpWait, ExecID: execID})
	if err != nil {
		return wire.ExecState{}, err
	}
	if resp.Exec == nil {
		return wire.ExecState{}, errors.New("shim protocol: exec state missing")
	}
	return *resp.Exec, nil
}

// ExecState reports an exec process (errdefs.ErrNotFound for an unknown id).
func (c *Client) ExecState(ctx context.Context, execID string) (wire.ExecState, error) {
	resp, err := c.call(ctx, &wire.Request{Op: wire.OpExecState, ExecID: execID})
	if err != nil {
		return wire.ExecState{}, err
	}
	if resp.Exec == nil {
		return wire.ExecState{}, errors.New("shim protocol: exec state missing")
	}
	return *resp.Exec, nil
}
