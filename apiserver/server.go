// Package apiserver owns hutch's Docker Engine API HTTP server: routing,
// API-version negotiation, the mapping of error classes to HTTP statuses and
// the JSON plumbing shared by every endpoint. It knows nothing about
// containers or images itself; it calls the engine through the small
// interfaces in [Backend], so it can be tested against a fake.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/system"
)

// The range of API versions served. Requests under /v<version>/ outside it are
// refused with Docker's messages; unversioned requests use MaxAPIVersion.
const (
	// MinAPIVersion is the oldest version Docker Engine still serves.
	MinAPIVersion = "1.24"
	// MaxAPIVersion must follow github.com/moby/moby/api in go.mod, whose wire
	// types we send (a test enforces it).
	MaxAPIVersion = "1.56"
)

// shutdownTimeout bounds how long Serve waits for in-flight requests once its
// context is cancelled; after it, request contexts are cancelled and
// connections closed so that a stuck stream cannot hold the daemon up.
const shutdownTimeout = 5 * time.Second

// SystemBackend serves the system endpoints (/version, /info).
type SystemBackend interface {
	// Info returns the daemon-wide information shown by `docker info`.
	Info(ctx context.Context) (*system.Info, error)
	// Version returns the versions of the daemon and its components. The API
	// server overwrites APIVersion and MinAPIVersion with the range it serves.
	Version(ctx context.Context) (*system.VersionResponse, error)
}

// Backend is everything the API server needs from the engine. Errors returned
// by its methods should be classed with github.com/containerd/errdefs; the
// class decides the HTTP status (see errorStatus).
type Backend interface {
	SystemBackend
	ImageBackend
	ContainerBackend
	ExecBackend
	ArchiveBackend
	CommitBackend
	NetworkBackend
	VolumeBackend
	EventBackend
	DiskUsageBackend
	StatsBackend
	BuildBackend
}

// Options configures a Server.
type Options struct {
	// Logger receives one debug line per request and handler failures.
	// Nil discards everything.
	Logger *slog.Logger
	// Experimental is reported in the Docker-Experimental header.
	Experimental bool
	// Version is hutch's version, sent in the Server header. Empty means "dev".
	Version string
	// BuildKit serves BuildKit's endpoints; nil: none (classic builds only).
	BuildKit BuildKit
	// Swarm serves the swarm endpoints; nil: swarm mode is not available.
	Swarm Swarm
}

// Server is the Docker API server. Create it with New.
type Server struct {
	backend      Backend
	buildkit     BuildKit
	swarm        Swarm
	log          *slog.Logger
	experimental string // "true" or "false", as sent in Docker-Experimental
	serverHeader string
	handler      http.Handler
	// active counts running handlers: Serve waits for those of hijacked
	// connections (attach, exec), which http.Server.Shutdown does not.
	active sync.WaitGroup
}

// New returns a Server calling b.
func New(b Backend, o Options) *Server {
	s := &Server{
		backend:      b,
		buildkit:     o.BuildKit,
		swarm:        o.Swarm,
		log:          o.Logger,
		experimental: fmt.Sprint(o.Experimental),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	v := o.Version
	if v == "" {
		v = "dev"
	}
	// Docker sends "Docker/<version> (<os>)". Neither the docker CLI nor the Go
	// SDK read it, so we say who we are.
	s.serverHeader = fmt.Sprintf("hutch/%s (%s)", v, runtime.GOOS)

	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.path, s.endpoint(rt))
	}
	// Catch-all without a method: it answers unknown paths and also known
	// paths with the wrong method, which Docker answers with the same 404
	// (ServeMux would otherwise send a plain-text 405).
	mux.HandleFunc("/", notFound)
	s.handler = s.logRecover(s.grpcFirst(stripVersion(linkPath(mux))))
	return s
}

// grpcFirst sends gRPC calls made in HTTP/2 straight on the socket (as
// BuildKit's client does when given the daemon's address) to BuildKit, as
// Docker's daemon serves them beside the API; the rest goes to next.
func (s *Server) grpcFirst(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			if err := s.buildkitForward(w, r); err != nil {
				httpError(w, err)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler returns the HTTP handler serving the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves the API on l until ctx is cancelled, then shuts down
// gracefully. It returns nil after a clean stop and the listener's error if
// serving fails first. l is closed on return.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	// Requests must outlive a cancelled ctx during the graceful shutdown, but
	// keep its values; they are cancelled only if the shutdown times out.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	// HTTP/2 with prior knowledge carries gRPC (grpcFirst); HTTP/1.1
	// carries the API.
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         protocols,
		Handler:           s.handler,
		ReadHeaderTimeout: time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()

	select {
	case err := <-errc:
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.WarnContext(ctx, "API shutdown timed out, closing connections", "err", err)
		cancelBase()
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve API: %w", err)
	}
	// Handlers of hijacked connections end with their streams: give them
	// the rest of the shutdown time to finish cleanly.
	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-sctx.Done():
	}
	return nil
}
