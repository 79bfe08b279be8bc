// Package swarm is hutch-swarm: SwarmKit's node (Raft store,
// orchestrators, scheduler, dispatcher, CA, agent) embedded with hutch's
// executor, serving Docker's swarm endpoints (/swarm, /nodes, /services,
// /tasks, /secrets, /configs) on a socket the engine proxies to. The
// engine starts it at `docker swarm init` or `join`, and at its own start
// when swarm state exists; it exits when the node leaves its swarm
// (docs/swarm.md).
package swarm

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/moby/moby/client"

	"github.com/hutch-engine/hutch/swarm/proxy"
	"github.com/moby/swarmkit/v2/log"
	"github.com/sirupsen/logrus"
)

// Config says where hutch-swarm keeps its state and whom it talks to.
type Config struct {
	// Root is the node's state (<data-root>/swarm): SwarmKit's Raft log,
	// certificates and task database.
	Root string
	// StateDir holds the sockets and the secret and config files
	// (<runtime-dir>/swarm, on tmpfs where the runtime dir is).
	StateDir string
	// Socket is where Docker's swarm endpoints are served.
	Socket string
	// EngineSocket is the engine's API, through which tasks run.
	EngineSocket string
	Debug        bool
	Log          *slog.Logger
	// Ready is called once Socket takes connections.
	Ready func()
}

// InfoPath is hutch-swarm's answer for /info's Swarm section, for the
// engine alone.
const InfoPath = "/hutch/swarm-info"

// NetworkPath + an ID removes a network made for the swarm, for the
// engine alone.
const NetworkPath = "/hutch/networks/"

// Serve runs hutch-swarm until ctx ends or the node leaves its swarm.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	lg := logrus.New()
	lg.SetOutput(os.Stderr)
	lg.SetLevel(logrus.WarnLevel)
	if cfg.Debug {
		lg.SetLevel(logrus.DebugLevel)
	}
	log.L = logrus.NewEntry(lg)
	logrus.SetLevel(lg.GetLevel())

	engine, err := client.New(client.WithHost("unix://"+cfg.EngineSocket), client.WithHTTPHeaders(map[string]string{proxy.EngineHeader: "1"}))
	if err != nil {
		return err
	}
	defer engine.Close()
	c := newCluster(cfg, engine)
	if err := c.resume(ctx); err != nil {
		cfg.Log.Error("resume the swarm node", "err", err)
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
	}
	defer c.Stop(context.WithoutCancel(ctx))

	_ = os.Remove(cfg.Socket)
	l, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return err
	}
	if err := os.Chmod(cfg.Socket, 0o600); err != nil {
		l.Close()
		return err
	}
	srv := &http.Server{Handler: newHandler(c, cfg.Log), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	select {
	case <-ctx.Done():
	case <-c.left:
		cfg.Log.Info("left the swarm")
	case err := <-served:
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
