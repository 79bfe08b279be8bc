package oci

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// Main runs hutch-runtime: args are ["call"] (started by a shim, the
// request on wire.RuntimeFD), ["serve", socket] or ["serve", socket,
// "debug"] (the engine's runtime server, Serve) or ["delete", bundleDir] (the engine cleaning up after a
// shim that died).
func Main(args []string) error {
	switch {
	case len(args) == 1 && args[0] == "call":
		return call()
	case len(args) == 2 && args[0] == "serve":
		return Serve(args[1], false)
	case len(args) == 3 && args[0] == "serve" && args[2] == "debug":
		return Serve(args[1], true)
	case len(args) == 2 && args[0] == "delete":
		return deleteContainer(args[1])
	}
	return errors.New("usage: hutch-runtime call (started by hutch-shim), serve SOCKET [debug] (started by the engine), or delete BUNDLE")
}

// call answers one request of the shim.
func call() error {
	warm(wire.RuntimeFD)
	req, files, err := wire.RecvRuntimeRequest(wire.RuntimeFD)
	if errors.Is(err, io.EOF) {
		return nil // a warm shim that was never used
	}
	if err != nil {
		return err
	}
	if f := files[wire.FileLog]; f != nil {
		// The bundle's shim.log, also for a runtime started before the
		// shim knew its bundle.
		for _, fd := range []int{1, 2} {
			_ = unix.Dup3(int(f.Fd()), fd, 0)
		}
		_ = f.Close()
		delete(files, wire.FileLog)
	}
	reply, err := serve(req, files, setupLogs)
	for _, f := range files {
		_ = f.Close()
	}
	if err != nil {
		reply = &wire.RuntimeReply{Response: *wire.ErrorResponse(err)}
	}
	return wire.WriteJSONLine(os.NewFile(wire.RuntimeFD, "shim"), reply)
}

// serve answers req; logFor gives the logger of the request's container.
func serve(req *wire.RuntimeRequest, files map[string]*os.File, logFor func(*wire.Config) *slog.Logger) (*wire.RuntimeReply, error) {
	if !filepath.IsAbs(req.Bundle) {
		return nil, fmt.Errorf("bundle %q is not absolute: %w", req.Bundle, errdefs.ErrInvalidArgument)
	}
	cfg, err := wire.ReadConfig(req.Bundle)
	if err != nil {
		return nil, err
	}
	log := logFor(cfg)
	switch req.Op {
	case wire.RuntimeCreate:
		return create(cfg, req.Bundle, files, log)
	case wire.RuntimeExec:
		return execProcess(cfg, req.Process, files)
	case wire.RuntimePause, wire.RuntimeResume:
		return &wire.RuntimeReply{}, freeze(cfg, req.Op == wire.RuntimePause)
	case wire.RuntimeDelete:
		return destroy(cfg)
	}
	return nil, fmt.Errorf("unknown runtime op %q: %w", req.Op, errdefs.ErrNotImplemented)
}

// setupLogs sends libcontainer's logrus output and ours to stderr (the
// bundle's shim.log), at debug level when the engine asked for it.
func setupLogs(cfg *wire.Config) *slog.Logger {
	level := slog.LevelInfo
	logrus.SetLevel(logrus.WarnLevel)
	if cfg.Debug {
		level = slog.LevelDebug
		logrus.SetLevel(logrus.DebugLevel)
		// Sub-millisecond stamps: the debug log is how a start is profiled.
		logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000000"})
	}
	logrus.SetOutput(os.Stderr)
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("container", cfg.ID, "runtime", os.Getpid())
}
