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
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hutch-engine/hutch/internal/sidecar"
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
	pipes := sidecar.Flags(fs)
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
	cfg.Ready = pipes.Ready()
	ctx = pipes.Hold(ctx)
	if err := swarm.Serve(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hutch-swarm:", err)
		os.Exit(1)
	}
}
