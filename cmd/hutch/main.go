// Command hutch is hutch's CLI and daemon: `hutch daemon` serves the Docker
// Engine API on the user's socket; the other verbs help set it up.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hutch-engine/hutch/rootless"
	"github.com/hutch-engine/hutch/version"
	"github.com/urfave/cli/v2"
	"go.podman.io/storage/pkg/reexec"
)

func main() {
	// containers/storage re-executes this binary for layer extraction.
	if reexec.Init() {
		return
	}
	// rootlesskit's child and its unshare(1) run from this binary too.
	rootless.Dispatch()

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
		Commands: []*cli.Command{daemonCommand(), checkCommand(), envCommand(), versionCommand()},
	}
}
