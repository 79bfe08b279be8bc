package rootless

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/hutch-engine/hutch/internal/logging"
	"github.com/hutch-engine/hutch/rootless/keeper"
	"golang.org/x/sys/unix"
)

// KeeperName is the first argument of hutch-ns and of the namespace child
// when they keep a live-restore daemon's namespaces: not "daemon", so that
// neither is taken for the daemon's host process or its engine.
const KeeperName = "keeper"

// KeeperPidFile, in the state dir, holds the keeper's pid (hutch-ns's)
// while it runs.
const KeeperPidFile = "keeper.pid"

// Env is the Handover's environment entry for a keeper: `hutch
// daemon` starts hutch-ns with it (in a session of its own, so that it
// outlives the daemon) instead of exec'ing it.
func (h Handover) Env() (string, error) {
	h.Parent.Logger = nil
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return envHost + "=" + string(b), nil
}

// keepMain is hutch-ns as a keeper: rootlesskit's parent (slirp4netns, the
// port driver's parent side) for a namespace child, hutch-ns again, that
// keeps the user and mount namespaces for the engines (package
// rootless/keeper).
// It holds keeper.lock in the state dir while it runs, so that a keeper
// that is still ending and a new one never share rootlesskit's state dir.
func keepMain(h Handover) int {
	lock, err := os.OpenFile(filepath.Join(h.Keeper, "keeper.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: keeper lock: %v\n", err)
		return 1
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: keeper lock: %v\n", err)
		return 1
	}
	// The namespace child execs hutch-keeper once the namespaces are set
	// up: a missing one fails here, before rootlesskit's parent waits
	// on a child that is gone.
	bin, err := keeperBinary()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: %v\n", err)
		return 1
	}
	os.Setenv(envKeeperBin, bin)
	pidFile := filepath.Join(h.Keeper, KeeperPidFile)
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "hutch-ns: keeper pid file: %v\n", err)
		return 1
	}
	defer os.Remove(pidFile)
	os.Setenv(envKeeper, h.Keeper)
	os.Setenv(envKeeperLog, h.LogLevel)
	// The namespace child is this binary again (cmd/hutch-ns dispatches
	// it to the keeper), also in single-UID mode.
	if exe, err := os.Executable(); err == nil {
		h.Parent.Engine = exe
	}
	h.Parent.Logger = logging.New(h.LogLevel)
	return exitCode(RunParent(context.Background(), h.Parent))
}

// keeperBinary finds hutch-keeper: $HUTCH_KEEPER, beside this binary, or
// on PATH.
func keeperBinary() (string, error) {
	if p := os.Getenv("HUTCH_KEEPER"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), keeper.BinaryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(keeper.BinaryName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found: install it beside hutch-ns (make build puts it in bin/)", keeper.BinaryName)
}
