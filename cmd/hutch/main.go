// Command hutch is hutch's CLI and daemon: `hutch daemon` serves the Docker
// Engine API on the user's socket; the other verbs help set it up.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/hutch-engine/hutch/rootless/child"
	// With live restore, `hutch daemon` re-executes itself into the
	// kept namespaces: this package's constructor enters them.
	_ "github.com/hutch-engine/hutch/rootless/nsenter"
	"github.com/hutch-engine/hutch/version"
	"github.com/urfave/cli/v2"
	"go.podman.io/storage/pkg/reexec"
)

func init() {
	// No heap profile is ever read from the daemon: its sampling buckets
	// would hold a megabyte and more of the engine's idle memory.
	runtime.MemProfileRate = 0
	// The main goroutine keeps the main thread, so no other goroutine ever
	// runs there: the engine's threads that enter the detached network
	// namespace (rootless/child, rootless/network) never land on it, and
	// /proc/<pid>/ns/net, which is the main thread's, stays the host's.
	runtime.LockOSThread()
}

func main() {
	// containers/storage re-executes this binary for layer extraction.
	if reexec.Init() {
		return
	}
	// Started by hutch-ns as the namespace child, this process finishes
	// the namespaces first and then goes on as the engine.
	if err := child.Setup(); err != nil {
		fmt.Fprintf(os.Stderr, "hutch: namespace child: %v\n", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newApp().RunContext(ctx, os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "hutch: %v\n", err)
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

func newApp() *cli.App {
	return &cli.App{
		Name:            "hutch",
		Usage:           "a rootless, single-user container engine that serves the Docker Engine API",
		Version:         version.Version,
		HideHelpCommand: true,
		// Never a command named "init": libcontainer re-executes the shim with it.
		Commands: []*cli.Command{daemonCommand(), installCommand(), uninstallCommand(), checkCommand(), envCommand(), versionCommand()},
	}
}
