package apiserver

import (
	"net/http"
	"strings"

	"github.com/moby/moby/api/types/build"
)

// ping answers GET and HEAD /_ping. Clients negotiate the API version from
// its headers (Api-Version, set for every route in endpoint), so it must work
// without touching the engine.
func (s *Server) ping(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Pragma", "no-cache")
	// "2": BuildKit through /grpc and /session; "1" has the docker CLI
	// (without buildx) use the classic builder's POST /build.
	if s.buildkit != nil && s.buildkit.Available() {
		h.Set("Builder-Version", string(build.BuilderBuildKit))
	} else {
		h.Set("Builder-Version", string(build.BuilderV1))
	}
	h.Set("Swarm", s.swarmHeader(r.Context()))
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
	// The served range and experimental mode (Docker-Experimental) are the
	// API server's to state, not the engine's.
	v.APIVersion = MaxAPIVersion
	v.MinAPIVersion = MinAPIVersion
	v.Experimental = s.experimental == "true"
	for _, c := range v.Components {
		if c.Name == "Engine" && c.Details != nil {
			c.Details["ApiVersion"], c.Details["MinAPIVersion"] = v.APIVersion, v.MinAPIVersion
			c.Details["Experimental"] = s.experimental
		}
	}
	if composeV1(r) {
		v.APIVersion = composeV1APIVersion
	}
	return writeJSON(w, http.StatusOK, v)
}

// composeV1APIVersion is the API version offered to docker-compose 1.x:
// that of Docker 20.10, which it was last released against (1.29.2, with
// docker-py 5.0.3 whose default it also is). compose v1 adopts whatever
// ApiVersion GET /version states, then reads fields Docker has since
// dropped from newer versions' answers: image inspect's ContainerConfig
// (1.45) on every recreation, the events' id and status (1.52) in every
// attached up. Against Docker 26 and later these fail with KeyError.
const composeV1APIVersion = "1.41"

// composeV1 tells docker-compose 1.x by the User-Agent it always sends:
// "docker-compose/1.29.2 docker-py/5.0.3 Linux/6.1.0".
func composeV1(r *http.Request) bool {
	return strings.HasPrefix(r.UserAgent(), "docker-compose/1.")
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) error {
	info, err := s.backend.Info(r.Context())
	if err != nil {
		return err
	}
	info.ExperimentalBuild = s.experimental == "true"
	info.Swarm = s.swarmInfo(r.Context())
	out, err := infoFor(*info, APIVersion(r.Context()))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}
