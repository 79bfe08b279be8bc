package apiserver

import (
	"net/http"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/swarm"
)

// ping answers GET and HEAD /_ping. Clients negotiate the API version from
// its headers (Api-Version, set for every route in endpoint), so it must work
// without touching the engine.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Pragma", "no-cache")
	// We have no BuildKit; "1" makes the docker CLI use the classic builder API.
	h.Set("Builder-Version", string(build.BuilderV1))
	h.Set("Swarm", string(swarm.LocalNodeStateInactive))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		h.Set("Content-Length", "0")
		return nil
	}
	_, err := w.Write([]byte("OK"))
	return err
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) error {
	v, err := s.backend.Version(r.Context())
	if err != nil {
		return err
	}
	// The served range is the API server's to state, not the engine's.
	v.APIVersion = MaxAPIVersion
	v.MinAPIVersion = MinAPIVersion
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) error {
	info, err := s.backend.Info(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, info)
}
