// Package proxy is the engine's side of hutch's swarm mode: it starts
// hutch-swarm at `docker swarm init` or `join` (and at the engine's start
// when a swarm's state is on disk), forwards Docker's swarm endpoints to
// its socket, and asks it for /info's Swarm section. It links nothing of
// SwarmKit, so an engine outside any swarm carries none of it.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"

	"github.com/hutch-engine/hutch/internal/sidecar"
)

// Options say how to start hutch-swarm.
type Options struct {
	// Binary is hutch-swarm; empty: swarm mode is not available.
	Binary string
	// Root, StateDir and EngineSocket are its --root, --state and
	// --engine.
	Root, StateDir, EngineSocket string
	Debug                        bool
	Log                          *slog.Logger
}

// ErrNotRunning is Forward's answer when no swarm node runs and the
// request does not start one: the engine answers as a node outside any
// swarm.
var ErrNotRunning = errors.New("hutch-swarm is not running")

// EngineHeader marks hutch-swarm's own requests to the engine: the engine
// does not hand them back to hutch-swarm (a swarm network's removal).
const EngineHeader = "Hutch-Swarm"

// infoPath and stateFile mirror package swarm's InfoPath and state file
// (this package must not import it).
const (
	infoPath    = "/hutch/swarm-info"
	networkPath = "/hutch/networks/"
	stateFile   = "hutch-swarm.json"
)

const startTimeout = 30 * time.Second

// Proxy starts hutch-swarm on demand and forwards requests to it.
type Proxy struct {
	opt     Options
	socket  string
	client  *http.Client
	reverse *httputil.ReverseProxy

	mu     sync.Mutex
	closed bool
	proc   sidecar.Slot
}

// New returns a proxy; nothing starts yet.
func New(opt Options) *Proxy {
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{opt: opt, socket: filepath.Join(opt.StateDir, "swarm.sock")}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p.socket)
	}}
	p.client = &http.Client{Transport: tr}
	p.reverse = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "hutch-swarm"
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(opt.Log.Handler(), slog.LevelWarn),
	}
	return p
}

// Available reports whether hutch-swarm was found.
func (p *Proxy) Available() bool { return p.opt.Binary != "" }

// Running reports whether a hutch-swarm runs.
func (p *Proxy) Running() bool { return p.proc.Running() }

// HasState reports whether a swarm's state is under the data root: the
// engine then starts hutch-swarm with it.
func (p *Proxy) HasState() bool {
	_, err := os.Stat(filepath.Join(p.opt.Root, stateFile))
	return err == nil
}

// Resume starts hutch-swarm when a swarm's state is on disk, so that the
// node rejoins its swarm as the engine starts.
func (p *Proxy) Resume(ctx context.Context) error {
	if !p.HasState() || !p.Available() {
		return nil
	}
	return p.ensure(ctx)
}

// Forward serves one swarm request. POST /swarm/init and /swarm/join
// start hutch-swarm if need be, as does any request while a swarm's state
// is on disk (a hutch-swarm that died is started again); other requests
// are forwarded only to a running one (ErrNotRunning otherwise). A
// successful leave returns once hutch-swarm has exited.
func (p *Proxy) Forward(w http.ResponseWriter, r *http.Request) error {
	start := r.Method == http.MethodPost && (r.URL.Path == "/swarm/init" || r.URL.Path == "/swarm/join")
	if start || (!p.Running() && p.HasState() && p.Available()) {
		if err := p.ensure(r.Context()); err != nil {
			return err
		}
	} else if !p.Running() {
		return ErrNotRunning
	}
	if r.Method != http.MethodPost || r.URL.Path != "/swarm/leave" {
		p.reverse.ServeHTTP(w, r)
		return nil
	}
	// The reverse proxy flushes as it copies, so the client would have
	// the answer while hutch-swarm still runs (and a /_ping then asks a
	// process on its way out): a leave's answer is held until it exited.
	held := &heldResponse{header: http.Header{}}
	p.reverse.ServeHTTP(held, r)
	if held.status == http.StatusOK {
		p.proc.WaitExit(r.Context(), 20*time.Second)
	}
	held.writeTo(w)
	return nil
}

// heldResponse keeps a response to write it later.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(b)
}

func (h *heldResponse) writeTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status != 0 {
		w.WriteHeader(h.status)
	}
	_, _ = w.Write(h.body.Bytes())
}

// Info is /info's Swarm section: hutch-swarm's when it runs, else that of
// a node outside any swarm.
func (p *Proxy) Info(ctx context.Context) swarm.Info { return p.info(ctx, "") }

// Status is the node's state and role without the cluster's counts, for
// /_ping's Swarm header.
func (p *Proxy) Status(ctx context.Context) swarm.Info { return p.info(ctx, "?light=1") }

func (p *Proxy) info(ctx context.Context, query string) swarm.Info {
	inactive := swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive}
	if !p.Running() {
		return inactive
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://hutch-swarm"+infoPath+query, nil)
	if err != nil {
		return inactive
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return swarm.Info{LocalNodeState: swarm.LocalNodeStateError, Error: err.Error()}
	}
	defer resp.Body.Close()
	var info swarm.Info
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&info) != nil {
		return swarm.Info{LocalNodeState: swarm.LocalNodeStateError, Error: "hutch-swarm: " + resp.Status}
	}
	return info
}

// RemoveNetwork asks hutch-swarm to remove a network made for the swarm;
// ErrNotRunning when none runs.
func (p *Proxy) RemoveNetwork(ctx context.Context, id string) error {
	if !p.Running() {
		return ErrNotRunning
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "http://hutch-swarm"+networkPath+url.PathEscape(id), nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 300 {
		return nil
	}
	var m struct{ Message string }
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&m)
	switch resp.StatusCode {
	case http.StatusNotFound:
		return errdefs.ErrNotFound.WithMessage(m.Message)
	case http.StatusConflict:
		return errdefs.ErrConflict.WithMessage(m.Message)
	case http.StatusBadRequest:
		return errdefs.ErrInvalidArgument.WithMessage(m.Message)
	}
	return errors.New(m.Message)
}

// ensure starts hutch-swarm if it is not running, and waits for it to
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
		return errNoBinary
	}
	_ = os.Remove(p.socket)
	if err := os.MkdirAll(p.opt.StateDir, 0o700); err != nil {
		return err
	}
	args := []string{"--root", p.opt.Root, "--state", p.opt.StateDir, "--socket", p.socket, "--engine", p.opt.EngineSocket}
	if p.opt.Debug {
		args = append(args, "--debug")
	}
	proc, err := sidecar.Start(ctx, sidecar.Options{Name: "hutch-swarm", Binary: p.opt.Binary, Args: args, Socket: p.socket,
		LogFile: filepath.Join(p.opt.StateDir, "swarm.log"), Timeout: startTimeout})
	if err != nil {
		return err
	}
	p.proc.Keep(proc, func(err error) { p.opt.Log.Info("hutch-swarm exited", "err", err) })
	p.opt.Log.Info("hutch-swarm started", "pid", proc.Cmd.Process.Pid, "socket", p.socket)
	return nil
}

var errNoBinary = errdefs.ErrNotImplemented.WithMessage("swarm mode is not available: hutch-swarm was not found beside the hutch binary or on PATH")

// Close stops hutch-swarm (its node keeps its state for the next start):
// SIGTERM, and SIGKILL after 20 s.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.proc.Stop(20 * time.Second)
}
