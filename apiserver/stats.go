package apiserver

import (
	"context"
	"net/http"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// StatsBackend serves GET /containers/{id}/stats.
type StatsBackend interface {
	// ContainerStats calls send for each sample: one, or one a second
	// with req.Stream until ctx ends.
	ContainerStats(ctx context.Context, ref string, req engine.StatsRequest, send func(containertypes.StatsResponse) error) error
}

// containerStats answers GET /containers/{id}/stats: one JSON object, or
// with stream (the default) one per second, each flushed.
func (s *Server) containerStats(w http.ResponseWriter, r *http.Request) error {
	req := engine.StatsRequest{Stream: queryBoolDefault(r, "stream", true), OneShot: queryBool(r, "one-shot")}
	js := newJSONStream(w)
	err := s.backend.ContainerStats(r.Context(), r.PathValue("id"), req, func(st containertypes.StatsResponse) error {
		return js.sendValue(st)
	})
	return js.end(err)
}
