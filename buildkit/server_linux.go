package buildkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/hutch-engine/hutch/buildkit/proxy"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/util/grpcerrors"
	"github.com/moby/buildkit/util/resolver"
	resolverconfig "github.com/moby/buildkit/util/resolver/config"
	"google.golang.org/grpc"
)

// Config is the BuildKit process's configuration, from the engine.
type Config struct {
	// Root holds BuildKit's state: DataRoot/buildkit.
	Root string
	// StateDir holds its sockets and the build containers' libcontainer
	// state (under the engine's runtime directory).
	StateDir string
	// Socket is where the process serves /grpc and /session.
	Socket string
	// EngineSocket is the engine's API.
	EngineSocket string
	// RuntimeBinary is hutch-runtime.
	RuntimeBinary string
	// InsecureRegistries are reached over plain HTTP (daemon.json's
	// insecure-registries); loopback registries always are, as Docker
	// treats them.
	InsecureRegistries []string
	// DNS servers for build containers (daemon.json's dns).
	DNS   []string
	Debug bool
	// Ready, when set, is called once the socket takes connections.
	Ready func()
	// IdleExit, when set, ends the process once no connection has been
	// open for that long: its memory goes back, its state stays.
	IdleExit time.Duration
	Log      *slog.Logger

	RegistryHosts docker.RegistryHosts
}

// Serve runs the BuildKit daemon until ctx ends: the controller and its
// worker, the session manager, and an HTTP server on cfg.Socket that
// takes the engine's proxied POST /grpc (upgraded to h2c: BuildKit's
// control API) and POST /session (the client's session, hijacked), and
// the same requests' connections handed over whole on the hand-over
// socket beside it.
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	start := time.Now()
	for _, d := range []string{cfg.Root, cfg.StateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	cfg.RegistryHosts = registryHosts(cfg.InsecureRegistries)
	eng, err := newEngineClient(cfg.EngineSocket)
	if err != nil {
		return err
	}
	defer eng.Close()
	sm, err := session.NewManager()
	if err != nil {
		return err
	}
	tr := newTracer()
	ctrl, w, err := newController(ctx, cfg, sm, eng, tr)
	if err != nil {
		return err
	}
	cfg.Log.Debug("controller ready", "after", time.Since(start))
	defer ctrl.Close()
	defer w.exec.Close()
	// BuildKit's errors carry their details (the Dockerfile excerpt of
	// a syntax error, an exit code) as gRPC status details.
	gs := grpc.NewServer(
		tr.serverOption(),
		grpc.UnaryInterceptor(grpcerrors.UnaryServerInterceptor),
		grpc.StreamInterceptor(grpcerrors.StreamServerInterceptor),
	)
	ctrl.Register(gs)

	_ = os.Remove(cfg.Socket)
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		return err
	}
	if err := os.Chmod(cfg.Socket, 0o600); err != nil {
		ln.Close()
		return err
	}
	// The engine hands most clients' connections over whole
	// (proxy.HandoffPath).
	hl, err := proxy.ListenHandoff(proxy.HandoffPath(cfg.Socket))
	if err != nil {
		ln.Close()
		return err
	}
	idle := &activity{last: time.Now()}
	// The engine forwards gRPC made straight on its socket as HTTP/2 with
	// prior knowledge.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			idle.begin()
			defer idle.end()
			var err error
			switch {
			case r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc"):
				gs.ServeHTTP(rw, r)
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/grpc"):
				err = serveGRPC(rw, r, gs)
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/session"):
				err = sm.HandleHTTPRequest(r.Context(), rw, r)
			case r.Method == http.MethodGet && r.URL.Path == proxy.CachePath:
				err = serveCache(ctrl, rw, r)
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/build/prune"):
				servePrune(ctrl, rw, r)
			case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/build"):
				serveBuild(ctrl, filepath.Join(cfg.Root, "tmp"), rw, r)
			default:
				http.NotFound(rw, r)
				return
			}
			if err != nil {
				cfg.Log.Debug("buildkit connection ended", "path", r.URL.Path, "err", err)
			}
		}),
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- srv.Serve(hl) }()
	cfg.Log.Info("buildkit ready", "socket", cfg.Socket, "root", cfg.Root, "after", time.Since(start))
	if cfg.Ready != nil {
		cfg.Ready()
	}
	var idleC <-chan time.Time
	if cfg.IdleExit > 0 {
		tick := time.NewTicker(min(cfg.IdleExit/4, 10*time.Second))
		defer tick.Stop()
		idleC = tick.C
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-errc:
			return err
		case <-idleC:
			if idle.idleFor() >= cfg.IdleExit {
				cfg.Log.Info("buildkit idle: exiting", "idle", cfg.IdleExit)
				break wait
			}
		}
	}
	// No new connection from here: the engine starts another process
	// for the next one.
	ln.Close()
	hl.Close()
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	gs.Stop()
	return nil
}

// serveGRPC answers the h2c upgrade of POST /grpc and serves BuildKit's
// control API on the connection, as Docker's daemon does.
func serveGRPC(rw http.ResponseWriter, r *http.Request, gs *grpc.Server) error {
	if proto := r.Header.Get("Upgrade"); proto != "h2c" {
		http.Error(rw, fmt.Sprintf("protocol %q not supported: upgrade to h2c", proto), http.StatusBadRequest)
		return nil
	}
	hj, ok := rw.(http.Hijacker)
	if !ok {
		return errors.New("connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return err
	}
	resp := &http.Response{
		StatusCode: http.StatusSwitchingProtocols,
		ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"h2c"}},
	}
	if err := resp.Write(conn); err != nil {
		conn.Close()
		return err
	}
	serveHTTP2(conn, gs)
	return nil
}

// serveHTTP2 serves HTTP/2 on conn, the client's preface first, as after
// an h2c upgrade, until the connection ends.
func serveHTTP2(conn net.Conn, h http.Handler) {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	l := &oneConnListener{conn: &notifyConn{Conn: conn, closed: make(chan struct{})}}
	l.done = l.conn.closed
	srv := &http.Server{Protocols: protocols, Handler: h}
	go srv.Serve(l)
	<-l.done
	srv.Close()
}

// oneConnListener hands out one connection, then waits for its end.
type oneConnListener struct {
	conn *notifyConn
	done <-chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// notifyConn closes closed once it is closed.
type notifyConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *notifyConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// registryHosts is BuildKit's registry configuration: HTTPS, with plain
// HTTP for the insecure registries named (and loopback, which
// BuildKit's default already allows).
func registryHosts(insecure []string) docker.RegistryHosts {
	m := map[string]resolverconfig.RegistryConfig{}
	yes := true
	for _, h := range insecure {
		h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "http://"), "https://"), "/")
		if h == "" || strings.Contains(h, "/") { // CIDRs are not hosts
			continue
		}
		m[h] = resolverconfig.RegistryConfig{PlainHTTP: &yes, Insecure: &yes}
	}
	return resolver.NewRegistryConfig(m)
}

// SocketPath is where the BuildKit process of an engine with runtime
// directory stateDir listens.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, "buildkit.sock") }

// activity counts open connections and when the last one ended.
type activity struct {
	mu   sync.Mutex
	open int
	last time.Time
}

func (a *activity) begin() {
	a.mu.Lock()
	a.open++
	a.mu.Unlock()
}

func (a *activity) end() {
	a.mu.Lock()
	a.open--
	a.last = time.Now()
	a.mu.Unlock()
}

// idleFor is how long no connection has been open.
func (a *activity) idleFor() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open > 0 {
		return 0
	}
	return time.Since(a.last)
}
