package apiserver

import (
	"net/http"
	"strings"
)

// distributionInspect is GET /distribution/{name}/json: the descriptor and
// platforms of name's manifest, asked of its registry. Names hold slashes,
// so the route takes the rest of the path and "/json" must end it. As in
// dockerd, a malformed X-Registry-Auth is ignored rather than refused.
func (s *Server) distributionInspect(w http.ResponseWriter, r *http.Request) error {
	name, ok := strings.CutSuffix(r.PathValue("rest"), "/json")
	if !ok || name == "" {
		notFound(w, r)
		return nil
	}
	auth, _ := registryAuth(r) // malformed: none, as dockerd
	res, err := s.backend.DistributionInspect(r.Context(), name, auth)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
