// Command hutch-ns is the host side of a rootless hutch daemon: `hutch
// daemon` resolves its configuration, takes the per-user lock and execs
// this binary, which then creates the user and mount namespaces
// (rootlesskit's parent: newuidmap, slirp4netns, the port driver) and runs
// the hutch binary inside them as the engine (package rootless).
//
// With live restore it is the keeper instead: started by `hutch daemon` in
// a session of its own, it is rootlesskit's parent and, run again as its
// namespace child, sets the namespaces up and execs hutch-keeper, the
// small program that holds them between engines (package rootless/keeper).
//
// It is a binary of its own so that the processes that wait for the
// daemon's whole life map a few megabytes, not the engine's dozens: it
// links rootlesskit and nothing of the engine.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

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
	if dir, level, bin, ok := rootless.KeeperChild(); ok {
		os.Exit(keep(dir, level, bin))
	}
	os.Exit(rootless.Main())
}

// keep is the keeper's namespace child: it finishes the namespaces as the
// engine does without live restore (rootless/child), then execs
// hutch-keeper, which holds them for the engines until none runs and no
// container is left (rootless/keeper). A Go process that only waits would
// map several megabytes for the daemon's whole life; hutch-keeper maps a
// few hundred kilobytes.
func keep(stateDir, level, bin string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "hutch-ns: namespace child: "+format+"\n", a...)
		return 1
	}
	if bin == "" {
		return fail("no hutch-keeper named by the keeper's parent")
	}
	ns, err := child.Prepare()
	if err != nil {
		return fail("%v", err)
	}
	if ns == nil {
		return fail("not started by rootlesskit's parent")
	}
	args, err := keeper.Command(bin, keeper.Options{
		StateDir: stateDir,
		Reply:    keeper.Reply{V: keeper.Version, PID: os.Getpid(), Env: rootless.InsideEnv()},
		Parent:   os.Getppid(),
		NetNS:    ns.NetNS,
		Port:     ns.Port,
		Debug:    strings.EqualFold(level, "debug"),
	})
	if err != nil {
		return fail("%v", err)
	}
	// The main thread (locked in init) is still in the host's network
	// namespace; hutch-keeper enters the detached one itself.
	err = syscall.Exec(bin, args, os.Environ())
	return fail("exec %s: %v", bin, err)
}
