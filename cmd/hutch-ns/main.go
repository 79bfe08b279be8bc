// Command hutch-ns is the host side of a rootless hutch daemon: `hutch
// daemon` resolves its configuration, takes the per-user lock and execs
// this binary, which then creates the user and mount namespaces
// (rootlesskit's parent: newuidmap, slirp4netns, the port driver) and runs
// the hutch binary inside them as the engine (package rootless).
//
// With live restore it is the keeper instead: started by `hutch daemon` in
// a session of its own, it is rootlesskit's parent and, run again as its
// namespace child, the process that holds the namespaces between engines
// (package rootless/keeper).
//
// It is a binary of its own so that the processes that wait for the
// daemon's whole life map a few megabytes, not the engine's dozens: it
// links rootlesskit and nothing of the engine.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/hutch-engine/hutch/internal/logging"
	"github.com/hutch-engine/hutch/rootless"
	"github.com/hutch-engine/hutch/rootless/child"
	"github.com/hutch-engine/hutch/rootless/keeper"
)

func init() {
	// The main goroutine keeps the main thread: the keeper's threads that
	// enter the detached network namespace never land on it.
	runtime.LockOSThread()
}

func main() {
	if dir, level, ok := rootless.KeeperChild(); ok {
		os.Exit(keep(dir, level))
	}
	os.Exit(rootless.Main())
}

// keep is the keeper's namespace child: it finishes the namespaces as the
// engine does without live restore (rootless/child), then hands them to
// the engines until none runs and no container is left.
func keep(stateDir, level string) int {
	log := logging.New(level)
	if err := child.Setup(); err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: namespace child: %v\n", err)
		return 1
	}
	// It waits for the daemon's whole life, beside its parent: what the
	// set-up allocated goes back, and one P keeps its threads few.
	runtime.GOMAXPROCS(1)
	debug.FreeOSMemory()
	err := keeper.Serve(context.Background(), keeper.Options{StateDir: stateDir, Env: rootless.InsideEnv(), Logger: log})
	if err != nil {
		log.Error("keeper", "err", err)
		return 1
	}
	return 0
}
