package rootless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rootless-containers/rootlesskit/v3/pkg/network"
	"github.com/rootless-containers/rootlesskit/v3/pkg/network/slirp4netns"
	"github.com/rootless-containers/rootlesskit/v3/pkg/parent"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// IDMap names the id mapping of the user namespace.
type IDMap string

const (
	// IDMapFull maps uid 0 to the user and 1… to the user's subuid ranges.
	IDMapFull IDMap = "full"
	// IDMapSingle maps only uid 0 to the user: no newuidmap, no subuid
	// ranges; files of other owners are chowned to 0 on extraction.
	IDMapSingle IDMap = "single"
	// IDMapNone is real root: no user namespace at all.
	IDMapNone IDMap = "none"
)

// CurrentIDMap tells the engine which mapping its namespace has.
func CurrentIDMap() IDMap {
	if !Inside() {
		return IDMapNone
	}
	if m := IDMap(os.Getenv(envMode)); m == IDMapSingle {
		return m
	}
	return IDMapFull
}

// HostUID is the uid of the user outside the namespace (os.Getuid outside).
func HostUID() int {
	if v, err := strconv.Atoi(os.Getenv(envParentEUID)); err == nil {
		return v
	}
	return os.Getuid()
}

// ParentOptions configures the namespaces the parent creates.
type ParentOptions struct {
	// StateDir is rootlesskit's state dir. rootlesskit empties it at start
	// and removes it at exit, so nothing of hutch's may live there.
	StateDir string
	// IDMap is IDMapFull or IDMapSingle.
	IDMap IDMap
	// Network enables the detached network namespace served by slirp4netns.
	Network bool
	// MTU of the slirp4netns tap device (0: 65520).
	MTU int
	// Engine is the hutch binary the child runs, with this process's
	// arguments, as the namespace child and then the engine.
	Engine string
	Logger *slog.Logger
}

// RunParent runs the engine binary, with the same arguments, inside new
// user and mount namespaces and blocks until it exits. Signals received
// are forwarded to it.
func RunParent(ctx context.Context, o ParentOptions) error {
	if err := parent.InitStateDir(o.StateDir); err != nil {
		return fmt.Errorf("rootlesskit state dir %s: %w", o.StateDir, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	os.Setenv(envMode, string(o.IDMap))
	os.Setenv(envNetwork, map[bool]string{true: "1", false: "0"}[o.Network])
	opt := parent.Opt{
		PipeFDEnvKey:             envPipeFD,
		ChildUseActivationEnvKey: envChildActivation,
		StateDir:                 o.StateDir,
		StateDirEnvKey:           EnvStateDir,
		ParentEUIDEnvKey:         envParentEUID,
		ParentEGIDEnvKey:         envParentEGID,
		DetachNetNS:              o.Network,
		// The host's / is private on many machines; rslave is refused there.
		Propagation: "rprivate",
		// getsubids is missing or broken on many hosts: read /etc/subuid.
		SubidSource: parent.SubidSourceStatic,
	}
	if o.Network {
		nd, pd, err := networkDrivers(o)
		if err != nil {
			return err
		}
		opt.NetworkDriver, opt.PortDriver = nd, pd
	}
	if o.IDMap == IDMapSingle {
		return runSingleParent(ctx, opt, o.Engine)
	}
	// rootlesskit's parent starts /proc/self/exe (this small binary) as
	// the child, which execs the engine binary named here (Main).
	os.Setenv(envEngine, o.Engine)
	err := parent.Parent(opt)
	if engineGone(err) {
		// rootlesskit's parent returns at once when the engine stops
		// before the port driver's hand-shake ended (a daemon stopped
		// right after it started), without waiting for it: its own exit
		// says how it went.
		if code, ok := reapEngine(filepath.Base(o.Engine), 5*time.Second); ok {
			if code == 0 {
				return nil
			}
			return engineExit(code)
		}
	}
	return err
}

// engineGone reports an error of the port driver's hand-shake that means
// the engine's end of it closed.
func engineGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// reapEngine waits, up to limit, for this process's child named comm
// (the engine) to exit and returns its exit status.
func reapEngine(comm string, limit time.Duration) (int, bool) {
	if len(comm) > 15 {
		comm = comm[:15]
	}
	pid := 0
	for _, p := range procstat.Children(os.Getpid()) {
		if p.Comm == comm {
			pid = p.PID
			break
		}
	}
	if pid == 0 {
		return 0, false
	}
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		var ws syscall.WaitStatus
		if n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != nil {
			return 0, false
		} else if n == pid {
			if ws.Exited() {
				return ws.ExitStatus(), true
			}
			return 128 + int(ws.Signal()), true
		}
		if time.Now().After(deadline) {
			return 0, false
		}
	}
}

// engineExit is the engine's non-zero exit status.
type engineExit int

func (e engineExit) Error() string { return fmt.Sprintf("engine exited with status %d", int(e)) }

// ExitCode is the status hutch-ns exits with.
func (e engineExit) ExitCode() int { return int(e) }

func networkDrivers(o ParentOptions) (network.ParentDriver, port.ParentDriver, error) {
	bin, err := exec.LookPath("slirp4netns")
	if err != nil {
		return nil, nil, errors.New("slirp4netns is not installed: install it (apt-get install slirp4netns) or start with --network=none")
	}
	logw := debugWriter{o.Logger.With("component", "slirp4netns")}
	// The sandbox of slirp4netns cannot work with a detached netns
	// (slirp4netns#317); host loopback stays reachable as 10.0.2.2 so
	// containers can reach registries and services on the user's localhost.
	nd, err := slirp4netns.NewParentDriver(logw, bin, o.MTU, nil, "tap0", false, "", false, false, false)
	if err != nil {
		return nil, nil, fmt.Errorf("slirp4netns: %w", err)
	}
	pd, err := builtin.NewParentDriver(debugWriter{o.Logger.With("component", "port")}, o.StateDir, true, "auto")
	if err != nil {
		return nil, nil, fmt.Errorf("port driver: %w", err)
	}
	return nd, pd, nil
}

// debugWriter turns the output of rootlesskit's drivers into debug logs.
type debugWriter struct{ l *slog.Logger }

var _ io.Writer = debugWriter{}

func (w debugWriter) Write(p []byte) (int, error) {
	w.l.Debug(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
