package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/hutch-engine/hutch/buildkit/proxy"
	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/internal/activation"
	"github.com/hutch-engine/hutch/internal/idle"
	swarmproxy "github.com/hutch-engine/hutch/swarm/proxy"
)

// fromSystemd takes the socket systemd passed to `hutch daemon`
// (hutch.socket, or systemd-socket-activate) and makes it the daemon's
// socket path. nil when the daemon was started without one.
func fromSystemd(c *config.Config, log *slog.Logger) (*os.File, error) {
	f, err := activation.Take()
	if err != nil || f == nil {
		return nil, err
	}
	p, err := activation.Path(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if p != c.Socket {
		log.Info("serving the socket from systemd, not the configured one", "socket", p, "configured", c.Socket)
	}
	c.Socket = p
	return f, nil
}

// apiListener is the engine's unix socket: the one from systemd (passed
// down the process tree by the host process, or given here as real root),
// else a socket of its own at c.Socket. own says whether the daemon made
// the socket, and so removes it at exit: systemd's stays.
func apiListener(c *config.Config, fromHost *os.File) (l net.Listener, own bool, err error) {
	f := fromHost
	if f == nil {
		if f, err = activation.Inherited(); err != nil {
			return nil, false, err
		}
	}
	if f == nil {
		l, err := listenUnix(c.Socket)
		return l, true, err
	}
	defer f.Close()
	l, err = net.FileListener(f)
	return l, false, err
}

// quietSpell is how long the API stays quiet before the engine returns
// the memory a burst of work left in its heap.
const quietSpell = 10 * time.Second

// newTracker watches the engine's connections and containers for
// --idle-exit and returns the heap's free memory after a quiet spell.
// A build keeps it up too: hutch-buildkit, which takes the builds'
// connections whole, is running; and so does swarm mode: a node of a
// swarm stays up for its swarm.
func newTracker(c *config.Config, eng *engine.Engine, bk *proxy.Proxy, sw *swarmproxy.Proxy, log *slog.Logger) *idle.Tracker {
	return idle.New(idle.Options{
		Exit: time.Duration(c.IdleExit),
		Busy: func(ctx context.Context) bool {
			return eng.Busy(ctx) || bk.Running() || sw.Running()
		},
		Quiet: quietSpell,
		OnRelease: func(took time.Duration) {
			log.Debug("returned free memory to the system", "took", took)

		},
	})
}
