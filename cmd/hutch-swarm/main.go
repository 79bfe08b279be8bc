// Command hutch-swarm is hutch's swarm mode (package
// github.com/hutch-engine/hutch/swarm): SwarmKit's node with hutch's
// executor. The engine starts it at `docker swarm init` or `join`, and at
// its own start when swarm state exists, and proxies Docker's swarm
// endpoints to its socket. It is a binary of its own so that an engine
// outside any swarm carries none of SwarmKit.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hutch-engine/hutch/swarm"
)

func main() {
	var cfg swarm.Config
	fs := flag.NewFlagSet("hutch-swarm", flag.ExitOnError)
	fs.StringVar(&cfg.Root, "root", "", "the node's state (the engine's data root/swarm)")
	fs.StringVar(&cfg.StateDir, "state", "", "runtime state: sockets, secret and config files")
	fs.StringVar(&cfg.Socket, "socket", "", "where to serve Docker's swarm endpoints")
	fs.StringVar(&cfg.EngineSocket, "engine", "", "the engine's API socket")
	fs.BoolVar(&cfg.Debug, "debug", false, "debug logging")
	readyFD := fs.Int("ready-fd", -1, "a pipe to close once the socket takes connections")
	holdFD := fs.Int("hold-fd", -1, "a pipe from the engine: stop when it reads EOF")
	_ = fs.Parse(os.Args[1:])
	if cfg.Root == "" || cfg.StateDir == "" || cfg.Socket == "" || cfg.EngineSocket == "" {
		fmt.Fprintln(os.Stderr, "hutch-swarm: --root, --state, --socket and --engine are required (the engine starts it)")
		os.Exit(2)
	}
	level := slog.LevelInfo
	if cfg.Debug {
		level = slog.LevelDebug
	}
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *readyFD >= 0 {
		ready := os.NewFile(uintptr(*readyFD), "ready")
		cfg.Ready = func() { ready.Close() }
	}
	if *holdFD >= 0 {
		ctx = holdBy(ctx, *holdFD)
	}
	if err := swarm.Serve(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hutch-swarm:", err)
		os.Exit(1)
	}
}

// holdBy returns a context that ends when fd, the engine's pipe, reads
// EOF: the engine has closed it or died.
func holdBy(ctx context.Context, fd int) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	f := os.NewFile(uintptr(fd), "engine-hold")
	go func() {
		_, _ = io.Copy(io.Discard, f)
		cancel()
	}()
	return ctx
}
