// Command hutch-ns is the host side of a rootless hutch daemon: `hutch
// daemon` resolves its configuration, takes the per-user lock and execs
// this binary, which then creates the user and mount namespaces
// (rootlesskit's parent: newuidmap, slirp4netns, the port driver) and runs
// the hutch binary inside them as the engine (package rootless).
//
// It is a binary of its own so that the process that waits on the engine
// for the daemon's whole life maps a few megabytes, not the engine's
// dozens: it links rootlesskit and nothing of the engine.
package main

import (
	"os"

	"github.com/hutch-engine/hutch/rootless"
)

func main() { os.Exit(rootless.Main()) }
