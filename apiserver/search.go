package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
)

// imageSearch is GET /images/search (docker search): term, limit (0 or
// absent: the registry's default of 25) and filters. As in dockerd, a
// malformed X-Registry-Auth is ignored: a search needs no credentials.
func (s *Server) imageSearch(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("invalid limit specified: %w%.0w", err, errdefs.ErrInvalidArgument)
		}
		if n < 0 {
			return fmt.Errorf("invalid limit specified%.0w", errdefs.ErrInvalidArgument)
		}
		limit = n
	}
	auth, _ := registryAuth(r) // malformed: none, as dockerd
	res, err := s.backend.SearchImages(r.Context(), q.Get("term"), limit, q.Get("filters"), auth)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
