package shim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim/wire"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// Create spawns a shim for opts and returns once the container exists with
// its process created but not running (docker create + the part of docker
// start that can fail), so the engine can Attach before Start and lose no
// output. The shim runs in its own process group, detached from the engine, and
// outlives it. A command that cannot run is a *StartError here.
//
// If ctx ends before the shim is ready, the shim is killed.
func Create(ctx context.Context, opts StartOptions) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg := wire.Config{
		ID: opts.ID, StateDir: opts.StateDir, SocketPath: opts.SocketPath, LogPath: opts.LogPath, LogRotation: opts.LogRotation,
		LogAttrs: opts.LogAttrs,
		ExitFile: opts.ExitFile, Tty: opts.Tty, OpenStdin: opts.OpenStdin, StdinOnce: opts.StdinOnce,
		Height: opts.ConsoleHeight, Width: opts.ConsoleWidth, Debug: opts.Debug, RuntimeBinary: opts.RuntimeBinary,
		RuntimeServer: opts.RuntimeServer,
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(opts.BundleDir, wire.ConfigFile), b, 0o600, false); err != nil {
		return nil, err
	}
	for _, d := range []string{opts.StateDir, filepath.Dir(opts.SocketPath), filepath.Dir(opts.LogPath), filepath.Dir(opts.ExitFile)} {
		if d == "." { // no log (--log-driver none)
			continue
		}
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	// A stale exit file from an earlier run must not answer this one.
	if err := os.Remove(opts.ExitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var proc *os.Process
	var readyR *os.File
	if w := takeWarm(opts.ShimBinary, opts.RuntimeBinary, opts.RuntimeServer != ""); w != nil && w.hand(opts.BundleDir) == nil {
		proc, readyR = w.cmd.Process, w.ready
	} else if proc, readyR, err = spawn(opts); err != nil {
		return nil, err
	}
	defer readyR.Close()

	resp, err := readReady(ctx, readyR)
	if err != nil {
		_ = proc.Kill()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("shim for %s: %w (see %s)", opts.ID, err, filepath.Join(opts.BundleDir, "shim.log"))
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	return &Client{socket: opts.SocketPath, exitFile: opts.ExitFile, pid: resp.Pid}, nil
}

// spawn executes a shim for opts and returns it with the read end of its
// ready pipe.
func spawn(opts StartOptions) (*os.Process, *os.File, error) {
	shimLog, err := os.OpenFile(filepath.Join(opts.BundleDir, "shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer shimLog.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(opts.ShimBinary, "run", opts.BundleDir)
	cmd.Dir = opts.BundleDir
	cmd.Stdout, cmd.Stderr = shimLog, shimLog
	cmd.ExtraFiles = []*os.File{readyW}
	// Its own process group: terminal signals meant for the engine never
	// reach the shim, and it outlives the engine. Not its own session: each
	// session is a scheduling group of its own where the kernel groups by
	// session (sched_autogroup), and one per shim cost bursts of starts
	// about a tenth of their throughput (docs/architecture.md).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = wire.OneP(os.Environ())
	err = cmd.Start()
	_ = readyW.Close()
	if err != nil {
		readyR.Close()
		return nil, nil, fmt.Errorf("start shim: %w", err)
	}
	// The engine reaps its shims; after an engine restart they are
	// reparented and their exit is read from the exit file.
	go func() { _ = cmd.Wait() }()
	return cmd.Process, readyR, nil
}

// Start is Create followed by Client.Start, for callers with nothing to
// attach (docker start -d). On failure the shim is gone.
func Start(ctx context.Context, opts StartOptions) (*Client, error) {
	c, err := Create(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		_ = c.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return nil, err
	}
	return c, nil
}

func readReady(ctx context.Context, r *os.File) (*wire.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = r.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = r.SetReadDeadline(time.Now()) })
	defer stop()
	var resp wire.Response
	if err := wire.ReadJSONLine(bufio.NewReader(r), &resp); err != nil {
		return nil, fmt.Errorf("shim exited before it was ready: %w", err)
	}
	return &resp, nil
}

func (o *StartOptions) validate() error {
	if o.ID == "" || strings.ContainsAny(o.ID, "/\x00") {
		return fmt.Errorf("shim: invalid container id %q: %w", o.ID, errdefs.ErrInvalidArgument)
	}
	for name, p := range map[string]string{
		"BundleDir": o.BundleDir, "StateDir": o.StateDir, "SocketPath": o.SocketPath,
		"LogPath": o.LogPath, "ExitFile": o.ExitFile, "ShimBinary": o.ShimBinary, "RuntimeBinary": o.RuntimeBinary,
	} {
		if !filepath.IsAbs(p) && (name != "LogPath" || p != "") {
			return fmt.Errorf("shim: %s %q is not absolute: %w", name, p, errdefs.ErrInvalidArgument)
		}
	}
	// A unix socket path is limited to 108 bytes.
	if len(o.SocketPath) >= 108 {
		return fmt.Errorf("shim: socket path %q is too long: %w", o.SocketPath, errdefs.ErrInvalidArgument)
	}
	if _, err := os.Stat(o.ShimBinary); err != nil {
		return fmt.Errorf("shim binary: %w: %w", err, errdefs.ErrFailedPrecondition)
	}
	bin, err := filepath.EvalSymlinks(o.RuntimeBinary)
	if err != nil {
		return fmt.Errorf("runtime binary: %w: %w", err, errdefs.ErrFailedPrecondition)
	}
	state, err := filepath.Abs(o.StateDir)
	if err != nil {
		return err
	}
	if s, err := filepath.EvalSymlinks(state); err == nil {
		state = s
	}
	if nested(filepath.Dir(bin), state) {
		return fmt.Errorf("shim: state dir %s and the runtime binary's directory %s must not be nested (libcontainer would copy the binary on every start): %w",
			state, filepath.Dir(bin), errdefs.ErrInvalidArgument)
	}
	return nil
}

// nested reports whether one of the directories contains the other.
func nested(a, b string) bool {
	within := func(p, dir string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	return within(a, b) || within(b, a)
}

// Delete cleans up after a shim that died without recording an exit (kill
// -9, OOM): hutch-runtime kills the container's processes and removes
// libcontainer's state, using the bundle's shim.json. It is a no-op for a
// container that is already gone; do not call it while the shim lives.
func Delete(ctx context.Context, runtimeBinary, bundleDir string) error {
	out, err := exec.CommandContext(ctx, runtimeBinary, "delete", bundleDir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("delete container of %s: %w: %s", bundleDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}
