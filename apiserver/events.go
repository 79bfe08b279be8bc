package apiserver

import (
	"context"
	"net/http"

	"github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine"
)

// EventBackend is the engine's events.
type EventBackend interface {
	// Events calls begin once the request is valid, then send for each
	// event, until the request's Until or ctx's end.
	Events(ctx context.Context, req engine.EventsRequest, begin func(), send func(events.Message) error) error
}

// legacyEvent is an event as API versions before 1.52 show it: a
// container's and an image's also have status, id and from (the image of
// a container).
type legacyEvent struct {
	Status string `json:"status,omitempty"`
	ID     string `json:"id,omitempty"`
	From   string `json:"from,omitempty"`
	events.Message
}

// events streams GET /events: one JSON object per event, each flushed as
// it comes, as JSON lines or (asked for in Accept) a JSON text sequence.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	req := engine.EventsRequest{Since: q.Get("since"), Until: q.Get("until"), Filters: q.Get("filters")}
	legacy := versionLess(APIVersion(r.Context()), "1.52")
	js := newJSONStream(w)
	// API 1.52 names the stream for what it is, and serves the JSON
	// stream types a client asks for by name.
	if !legacy {
		js.contentType = mediaJSONLines
	}
	if ct := acceptedExactly(r.Header, jsonStreamTypes); ct != "" {
		js.contentType = ct
	}
	err := s.backend.Events(r.Context(), req, js.begin, func(m events.Message) error {
		if legacy && (m.Type == events.ContainerEventType || m.Type == events.ImageEventType) {
			le := legacyEvent{Status: string(m.Action), ID: m.Actor.ID, Message: m}
			if m.Type == events.ContainerEventType {
				le.From = m.Actor.Attributes["image"]
			}
			return js.sendValue(le)
		}
		return js.sendValue(m)
	})
	return js.end(err)
}
