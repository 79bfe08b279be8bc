// Command hutch-shim is the per-container shim: the engine starts one per
// running container (see package github.com/hutch-engine/hutch/engine/shim).
//
// The same binary is re-executed by libcontainer as the container's init
// ("/proc/self/exe init"), so main stays tiny: every package linked here adds
// to the start latency of every container.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	// Devices cgroup support; without it libcontainer cannot apply device rules.
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer"
	// nsenter's C constructor joins namespaces before the Go runtime starts.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	"github.com/hutch-engine/hutch/engine/shim/server"
)

func init() {
	// libcontainer runs "/proc/self/exe init" for the container's processes;
	// that must happen before main, after nsenter's constructor.
	if len(os.Args) > 1 && os.Args[1] == "init" {
		// The init lives for a few milliseconds before it execs the
		// container's command: a collection would be work thrown away.
		debug.SetGCPercent(-1)
		libcontainer.Init()
	}
}

func main() {
	if err := server.Main(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hutch-shim:", err)
		os.Exit(1)
	}
}
