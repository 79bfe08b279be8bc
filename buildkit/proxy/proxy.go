// Package proxy is the engine's side of hutch's BuildKit daemon: it
// starts hutch-buildkit at the first POST /grpc or POST /session and
// forwards those requests, whole connections, to its socket. It links
// nothing of BuildKit, so an engine that never builds carries none of it.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/build"

	"github.com/hutch-engine/hutch/internal/idle"
	"github.com/hutch-engine/hutch/internal/sidecar"
)

// Options say how to start hutch-buildkit.
type Options struct {
	// Binary is hutch-buildkit.
	Binary string
	// Root, StateDir, EngineSocket and RuntimeBinary are its --root,
	// --state, --engine and --runtime.
	Root, StateDir, EngineSocket, RuntimeBinary string
	InsecureRegistries, DNS                     []string
	Debug                                       bool
	Log                                         *slog.Logger
	// IdleExit is how long hutch-buildkit stays with no connection before
	// it exits (the next build starts it again).
	IdleExit time.Duration
}

// startTimeout bounds the wait for a starting hutch-buildkit to listen.
const startTimeout = 60 * time.Second

// Proxy starts hutch-buildkit on demand and forwards connections to it.
type Proxy struct {
	opt     Options
	socket  string
	client  *http.Client
	reverse *httputil.ReverseProxy
	// grpc forwards gRPC sent straight on the API socket (HTTP/2 with
	// prior knowledge) as HTTP/2 to hutch-buildkit, trailers and all.
	grpc *httputil.ReverseProxy

	mu     sync.Mutex
	closed bool
	proc   sidecar.Slot
}

// New returns a proxy; nothing starts yet.
func New(opt Options) *Proxy {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{opt: opt, socket: opt.StateDir + "/buildkit.sock"}
	// Every HTTP request dials as a forwarded connection does: starting
	// hutch-buildkit if need be, past one that is exiting.
	p.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx) },
	}}
	p.reverse = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "hutch-buildkit"
		},
		Transport:     p.client.Transport,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(opt.Log.Handler(), slog.LevelWarn),
	}
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	p.grpc = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "hutch-buildkit"
		},
		Transport: &http.Transport{
			Protocols:   h2c,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx) },
		},
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(opt.Log.Handler(), slog.LevelWarn),
	}
	return p
}

// Forward serves one request of BuildKit's: an upgraded one (POST /grpc,
// /session) is handed to hutch-buildkit whole, the connection itself
// (handOver) or, over TLS, its bytes copied both ways until either side
// closes it; others (POST /build
// with version=2, /build/prune, and gRPC calls made in HTTP/2 straight on
// the socket) are proxied as HTTP, the response streamed as it comes.
func (p *Proxy) Forward(w http.ResponseWriter, r *http.Request) error {
	if r.ProtoMajor == 2 {
		if err := p.ensure(r.Context()); err != nil {
			return err
		}
		p.grpc.ServeHTTP(w, r)
		return nil
	}
	if r.Header.Get("Upgrade") == "" {
		// A start that fails is the engine's error to answer, not the
		// reverse proxy's bare 502.
		if err := p.ensure(r.Context()); err != nil {
			return err
		}
		p.reverse.ServeHTTP(w, r)
		return nil
	}
	return p.handOver(w, r)
}

// handOver gives an upgrade request's connection to hutch-buildkit: its
// socket, when it has one (handoff_linux.go), else (TLS) its bytes,
// copied both ways. One that is exiting (idle) refuses a hand-over: the
// next one is started.
func (p *Proxy) handOver(w http.ResponseWriter, r *http.Request) error {
	if err := p.ensure(r.Context()); err != nil {
		return err
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errors.New("connection cannot be hijacked")
	}
	var pre bytes.Buffer
	if err := r.Write(&pre); err != nil {
		return fmt.Errorf("buildkit: %w", err)
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		pre.Write(b)
	}
	uc := idle.UnixSocket(conn)
	if uc == nil {
		// Not a descriptor to hand over: the engine copies.
		backend, err := p.dial(r.Context())
		if err != nil {
			p.hijackedError(conn, err)
			return nil
		}
		defer backend.Close()
		if _, err := backend.Write(pre.Bytes()); err == nil {
			copyBoth(conn, backend)
		}
		return nil
	}
	for attempt := 0; ; attempt++ {
		err = sendConn(HandoffPath(p.socket), uc, pre.Bytes())
		if err == nil || attempt > 0 || !p.proc.WaitExit(r.Context(), 10*time.Second) {
			break
		}
		if err = p.ensure(r.Context()); err != nil {
			break
		}
	}
	if err != nil {
		p.hijackedError(conn, err)
	}
	return nil
}

// hijackedError answers on a hijacked connection, as Docker's JSON error.
func (p *Proxy) hijackedError(conn net.Conn, err error) {
	p.opt.Log.Warn("buildkit: handing a connection over", "err", err)
	body := fmt.Sprintf("{\"message\":%q}\n", "buildkit: "+err.Error())
	fmt.Fprintf(conn, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}

// copyBoth copies conn and backend both ways until either side closes.
func copyBoth(conn, backend net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(backend, conn)
		closeWrite(backend)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, backend)
		closeWrite(conn)
		done <- struct{}{}
	}()
	<-done
	// One side is done; the other gets a moment to finish its last words.
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// dial connects to hutch-buildkit, starting it first when none runs. One
// that is exiting (idle) refuses the connection: the next one is started.
func (p *Proxy) dial(ctx context.Context) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		if err := p.ensure(ctx); err != nil {
			return nil, err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", p.socket)
		if err == nil || attempt > 0 {
			return c, err
		}
		if !p.proc.WaitExit(ctx, 10*time.Second) {
			return nil, err
		}
	}
}

// ensure starts hutch-buildkit if it is not running, and waits for it to
// listen.
func (p *Proxy) ensure(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the engine is stopping")
	}
	if p.proc.Running() {
		return nil
	}
	if p.opt.Binary == "" {
		return errors.New("BuildKit is not available: hutch-buildkit was not found beside the hutch binary or on PATH (DOCKER_BUILDKIT=0 uses the classic builder)")
	}
	_ = os.Remove(p.socket)
	if err := os.MkdirAll(p.opt.StateDir, 0o700); err != nil {
		return err
	}
	args := []string{
		"--root", p.opt.Root, "--state", p.opt.StateDir, "--socket", p.socket,
		"--engine", p.opt.EngineSocket, "--runtime", p.opt.RuntimeBinary,
	}
	if len(p.opt.InsecureRegistries) > 0 {
		args = append(args, "--insecure-registries", strings.Join(p.opt.InsecureRegistries, ","))
	}
	if len(p.opt.DNS) > 0 {
		args = append(args, "--dns", strings.Join(p.opt.DNS, ","))
	}
	if p.opt.Debug {
		args = append(args, "--debug")
	}
	if p.opt.IdleExit > 0 {
		args = append(args, "--idle-exit", p.opt.IdleExit.String())
	}
	proc, err := sidecar.Start(ctx, sidecar.Options{Name: "hutch-buildkit", Binary: p.opt.Binary, Args: args, Socket: p.socket,
		LogFile: filepath.Join(p.opt.StateDir, "buildkit.log"), Timeout: startTimeout})
	if err != nil {
		return err
	}
	p.proc.Keep(proc, func(err error) { p.opt.Log.Info("hutch-buildkit exited", "err", err) })
	p.opt.Log.Info("hutch-buildkit started", "pid", proc.Cmd.Process.Pid, "socket", p.socket)
	return nil
}

// Close stops hutch-buildkit: SIGTERM, and SIGKILL after 10 s.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.proc.Stop(10 * time.Second)
}

// Running reports whether hutch-buildkit runs: the engine does not see
// the builds' connections, which it hands over, and stays up while one
// may be open (--idle-exit).
func (p *Proxy) Running() bool { return p.proc.Running() }

// Available reports whether hutch-buildkit was found.
func (p *Proxy) Available() bool { return p.opt.Binary != "" }

// HasState reports whether BuildKit has state (a build ran once): what
// asks for the build cache starts hutch-buildkit only then.
func (p *Proxy) HasState() bool {
	_, err := os.Stat(p.opt.Root)
	return p.opt.Binary != "" && err == nil
}

// BuildCache lists BuildKit's cache records for /system/df: none without
// state, else hutch-buildkit's (started if need be).
func (p *Proxy) BuildCache(ctx context.Context) ([]build.CacheRecord, error) {
	if !p.HasState() {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://hutch-buildkit"+CachePath, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("build cache: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("build cache: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var recs []build.CacheRecord
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		return nil, fmt.Errorf("build cache: %w", err)
	}
	return recs, nil
}

// CachePath is hutch-buildkit's listing of its cache records (Docker's
// build.CacheRecord, JSON), for the engine alone.
const CachePath = "/hutch/build-cache"

// LoadOriginHeader, set to "build" on hutch-buildkit's POST /images/load
// of a build's result, has the engine tell of the image as created (an
// image create event), as Docker's BuildKit exporter does, rather than
// loaded.
const LoadOriginHeader = "Hutch-Load-Origin"
