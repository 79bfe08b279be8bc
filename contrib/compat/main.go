// Command compat runs Docker Engine's own integration suite against hutch:
// the integration packages of github.com/moby/moby/v2, compiled from the Go
// module proxy at a pinned version, run against a dedicated hutch daemon as
// an unprivileged user, with Docker's frozen test images replaced by
// stand-ins served from a registry on loopback. The outcome is compared with
// known-failures.txt: a failure it does not list fails the run, and a listed
// test that passes is reported so that the list only shrinks.
//
//	compat build -dir DIR             fetch the module, compile the packages
//	compat run -dir DIR -bin BINDIR   stand-ins, registry, daemon, tests, report
//
// `make compat` runs both (contrib/compat/run.sh).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// MobyModule and MobyVersion name the suite: v2.0.0-beta.24 is the module of
// Docker 29.8.0 (its releases/versions.yaml), API 1.56.
const (
	MobyModule  = "github.com/moby/moby/v2"
	MobyVersion = "v2.0.0-beta.24"
)

// Packages are the integration packages that apply to a single-node
// rootless engine. Left out: daemon, daemon/nri, plugin/... and
// network/{ipvlan,macvlan,overlay,nat} start their own dockerd or need root
// on the host; config, secret and service are swarm mode; extension and
// internal/termtest hold no engine tests.
var Packages = []string{
	"build",
	"capabilities",
	"container",
	"image",
	"network",
	"network/bridge",
	"networking",
	"session",
	"system",
	"volume",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: compat build|run [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", "", "work directory: the suite's source and test binaries")
	pkgs := fs.String("pkgs", strings.Join(Packages, ","), "integration packages, comma-separated")
	switch args[0] {
	case "build":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" {
			return fmt.Errorf("build: -dir is required")
		}
		return buildSuite(ctx, *dir, split(*pkgs))
	case "run":
		bin := fs.String("bin", "", "directory holding hutch's binaries")
		known := fs.String("known", "", "the list of known failures")
		testRun := fs.String("run", "", "only tests matching this regular expression (-test.run)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" || *bin == "" || *known == "" {
			return fmt.Errorf("run: -dir, -bin and -known are required")
		}
		return runSuite(ctx, runConfig{Dir: *dir, Bin: *bin, Known: *known, Packages: split(*pkgs), Run: *testRun})
	default:
		return fmt.Errorf("unknown command %q: want build or run", args[0])
	}
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
