// Command hutch-runtime is the libcontainer side of the per-container shim
// (package github.com/hutch-engine/hutch/engine/shim/oci): hutch-shim
// starts it for each step that needs libcontainer, and libcontainer
// re-executes it as the container's init ("hutch-runtime init"). main stays
// tiny: every package linked here adds to the start latency of every
// container.
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

	"github.com/hutch-engine/hutch/engine/shim/oci"
	"github.com/hutch-engine/hutch/engine/shim/oci/filter"
)

func init() {
	// libcontainer runs "/proc/self/exe init" for the container's processes;
	// that must happen before main, after nsenter's constructor.
	if len(os.Args) > 1 && os.Args[1] == "init" {
		// The init lives for a few milliseconds before it execs the
		// container's command: a collection would be work thrown away.
		debug.SetGCPercent(-1)
		oci.DefaultSignals()
		// The seccomp program the runtime compiled, if any, installed
		// where runc would install its own.
		filter.Arm()
		libcontainer.Init()
	}
}

func main() {
	// A short-lived process: collecting its garbage is work thrown away.
	debug.SetGCPercent(-1)
	if err := oci.Main(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hutch-runtime:", err)
		os.Exit(1)
	}
}
