// Command hutch-buildkit is hutch's BuildKit daemon (package
// github.com/hutch-engine/hutch/buildkit): the engine starts it at the
// first build and proxies the Docker API's POST /grpc and POST /session
// to its socket. It is a binary of its own so that the engine, idle,
// carries none of BuildKit.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hutch-engine/hutch/buildkit"
	"github.com/hutch-engine/hutch/internal/sidecar"
)

func main() {
	var cfg buildkit.Config
	var insecure, dns string
	fs := flag.NewFlagSet("hutch-buildkit", flag.ExitOnError)
	fs.StringVar(&cfg.Root, "root", "", "BuildKit's state (the engine's data root/buildkit)")
	fs.StringVar(&cfg.StateDir, "state", "", "runtime state: sockets, build containers")
	fs.StringVar(&cfg.Socket, "socket", "", "where to serve /grpc and /session")
	fs.StringVar(&cfg.EngineSocket, "engine", "", "the engine's API socket")
	fs.StringVar(&cfg.RuntimeBinary, "runtime", "", "hutch-runtime")
	fs.StringVar(&insecure, "insecure-registries", "", "comma-separated registries reached over plain HTTP")
	fs.StringVar(&dns, "dns", "", "comma-separated DNS servers for build containers")
	fs.BoolVar(&cfg.Debug, "debug", false, "debug logging")
	fs.DurationVar(&cfg.IdleExit, "idle-exit", 0, "exit after this long with no connection (0: never)")
	pipes := sidecar.Flags(fs)
	_ = fs.Parse(os.Args[1:])
	if cfg.Root == "" || cfg.StateDir == "" || cfg.Socket == "" || cfg.EngineSocket == "" || cfg.RuntimeBinary == "" {
		fmt.Fprintln(os.Stderr, "hutch-buildkit: --root, --state, --socket, --engine and --runtime are required (the engine starts it)")
		os.Exit(2)
	}
	cfg.InsecureRegistries = splitList(insecure)
	cfg.DNS = splitList(dns)
	level := slog.LevelInfo
	if cfg.Debug {
		level = slog.LevelDebug
	}
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg.Ready = pipes.Ready()
	ctx = pipes.Hold(ctx)
	if err := buildkit.Serve(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "hutch-buildkit:", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
