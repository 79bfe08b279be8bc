package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
)

// BuildKit forwards BuildKit's endpoints: POST /grpc (BuildKit's control
// API, upgraded to h2c) and POST /session (the client's session,
// hijacked), which buildx and the docker CLI's BuildKit builds use.
type BuildKit interface {
	// Available reports whether builds can be forwarded (what /_ping's
	// Builder-Version says).
	Available() bool
	// Forward serves the request on its hijacked connection (or, for a
	// request that is no upgrade, proxies it); an error comes only
	// before anything is written.
	Forward(w http.ResponseWriter, r *http.Request) error
	// HasState reports whether BuildKit has a cache to speak of (a build
	// ran once); without it, prune and disk usage need not start it.
	HasState() bool
	// BuildCache lists BuildKit's cache records.
	BuildCache(ctx context.Context) ([]build.CacheRecord, error)
}

func (s *Server) buildkitForward(w http.ResponseWriter, r *http.Request) error {
	if s.buildkit == nil || !s.buildkit.Available() {
		return fmt.Errorf("BuildKit is not available on this daemon (DOCKER_BUILDKIT=0 uses the classic builder): %w", errdefs.ErrNotImplemented)
	}
	return s.buildkit.Forward(w, r)
}

// session is POST /session: the client's end of a BuildKit session,
// which only an upgrade to h2c opens. Other requests are refused with
// the words of BuildKit's session manager, as dockerd answers them (400).
func (s *Server) session(w http.ResponseWriter, r *http.Request) error {
	switch proto := r.Header.Get("Upgrade"); proto {
	case "h2c":
		return s.buildkitForward(w, r)
	case "":
		return errdefs.ErrInvalidArgument.WithMessage("no upgrade proto in request")
	default:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("protocol %s not supported", proto))
	}
}
