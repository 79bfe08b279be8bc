package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
)

// ImageBackend is the image half of the engine.
type ImageBackend interface {
	ImagePull(ctx context.Context, req engine.PullRequest, progress func(jsonstream.Message)) error
}

// registryAuth decodes X-Registry-Auth (base64url JSON, standard base64
// accepted). It is never logged.
func registryAuth(r *http.Request) (registry.AuthConfig, error) {
	h := r.Header.Get(registry.AuthHeader)
	if h == "" {
		return registry.AuthConfig{}, nil
	}
	ac, err := authconfig.Decode(h)
	if err != nil || ac == nil {
		return registry.AuthConfig{}, errdefs.ErrInvalidArgument.WithMessage("invalid X-Registry-Auth header: it must be base64url-encoded JSON with username, password and serveraddress")
	}
	return *ac, nil
}

// imagesCreate is POST /images/create: a pull (fromImage).
func (s *Server) imagesCreate(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("fromSrc") != "" {
		return errdefs.ErrNotImplemented.WithMessage("docker import is not supported yet")
	}
	if q.Get("fromImage") == "" {
		return errdefs.ErrInvalidArgument.WithMessage("fromImage or fromSrc is required")
	}
	auth, err := registryAuth(r)
	if err != nil {
		return err
	}
	stream := newJSONStream(w)
	err = s.backend.ImagePull(r.Context(), engine.PullRequest{
		FromImage: q.Get("fromImage"),
		Tag:       q.Get("tag"),
		Platform:  q.Get("platform"),
		Auth:      auth,
	}, stream.send)
	return stream.finish(err)
}

// jsonStream writes Docker's newline-delimited JSON progress: the headers
// go out with the first message, so an error before it is a plain HTTP
// error; an error after it is an errorDetail line, as Docker sends it.
type jsonStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
}

func newJSONStream(w http.ResponseWriter) *jsonStream {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonStream{w: w, enc: enc}
}

func (s *jsonStream) send(m jsonstream.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	s.enc.Encode(NewStreamMessage(m))
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *jsonStream) startLocked() {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
	}
}

// finish ends the stream: err goes out as HTTP error when nothing was sent.
func (s *jsonStream) finish(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.startLocked()
		return nil
	}
	if !s.started {
		return err
	}
	// Docker still sends the legacy "error" string beside errorDetail.
	s.enc.Encode(struct {
		ErrorDetail *jsonstream.Error `json:"errorDetail"`
		Error       string            `json:"error"`
	}{&jsonstream.Error{Message: err.Error()}, err.Error()})
	return nil
}
