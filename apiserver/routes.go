package apiserver

import (
	"context"
	"errors"
	"net/http"
)

// apiFunc is an endpoint. It returns an error instead of writing one, so that
// the status of every failure is chosen in one place (errorStatus).
// Path wildcards are read with r.PathValue, the API version with
// APIVersion(r.Context()).
type apiFunc func(w http.ResponseWriter, r *http.Request) error

// route is one endpoint: a method, a ServeMux path pattern without version
// prefix and without host, and its handler.
type route struct {
	method string
	path   string
	h      apiFunc
}

// routes lists every endpoint of the API. Add new endpoints here.
func (s *Server) routes() []route {
	return []route{
		// Docker answers OPTIONS on any path with an empty 200 (CORS preflight).
		{http.MethodOptions, "/", options},

		// system
		{http.MethodGet, "/_ping", s.ping},
		{http.MethodHead, "/_ping", s.ping},
		{http.MethodGet, "/version", s.version},
		{http.MethodGet, "/info", s.info},

		// images; names hold slashes: /images/{rest...} dispatches on the
		// last segment (imageRoute), the fixed paths are more specific.
		{http.MethodPost, "/images/create", s.imagesCreate},
		{http.MethodGet, "/images/json", s.imageList},
		{http.MethodGet, "/images/get", s.imageSaveMany},
		{http.MethodPost, "/images/load", s.imageLoad},
		{http.MethodPost, "/images/prune", s.imagePrune},
		{http.MethodGet, "/images/search", s.imageSearch},
		{http.MethodGet, "/images/{rest...}", s.imageRoute},
		{http.MethodPost, "/images/{rest...}", s.imageRoute},
		{http.MethodDelete, "/images/{rest...}", s.imageRoute},
		{http.MethodPost, "/auth", s.auth},
		{http.MethodGet, "/distribution/{rest...}", s.distributionInspect},

		// containers
		{http.MethodPost, "/containers/create", s.containerCreate},
		{http.MethodGet, "/containers/json", s.containerList},
		{http.MethodPost, "/containers/prune", s.containerPrune},
		{http.MethodGet, "/containers/{id}/json", s.containerInspect},
		{http.MethodPost, "/containers/{id}/start", s.containerStart},
		{http.MethodPost, "/containers/{id}/stop", s.containerStop},
		{http.MethodPost, "/containers/{id}/restart", s.containerRestart},
		{http.MethodPost, "/containers/{id}/kill", s.containerKill},
		{http.MethodPost, "/containers/{id}/wait", s.containerWait},
		{http.MethodGet, "/containers/{id}/logs", s.containerLogs},
		{http.MethodPost, "/containers/{id}/attach", s.containerAttach},
		{http.MethodPost, "/containers/{id}/resize", s.containerResize},
		{http.MethodPost, "/containers/{id}/rename", s.containerRename},
		{http.MethodGet, "/containers/{id}/top", s.containerTop},
		{http.MethodPost, "/containers/{id}/update", s.containerUpdate},
		{http.MethodGet, "/containers/{id}/stats", s.containerStats},
		{http.MethodPost, "/containers/{id}/pause", s.containerPause},
		{http.MethodPost, "/containers/{id}/unpause", s.containerUnpause},
		{http.MethodDelete, "/containers/{id}", s.containerRemove},
		{http.MethodDelete, "/containers/{parent}/{alias}", s.linkRemove},
		{http.MethodGet, "/containers/{id}/checkpoints", checkpointsUnsupported},
		{http.MethodPost, "/containers/{id}/checkpoints", checkpointsUnsupported},
		{http.MethodDelete, "/containers/{id}/checkpoints/{checkpoint}", checkpointsUnsupported},

		// commit, diff, export
		{http.MethodPost, "/commit", s.commit},
		{http.MethodGet, "/containers/{id}/changes", s.containerChanges},
		{http.MethodGet, "/containers/{id}/export", s.containerExport},

		// exec
		{http.MethodPost, "/containers/{id}/exec", s.execCreate},
		{http.MethodPost, "/exec/{id}/start", s.execStart},
		{http.MethodPost, "/exec/{id}/resize", s.execResize},
		{http.MethodGet, "/exec/{id}/json", s.execInspect},

		// archive
		{http.MethodHead, "/containers/{id}/archive", s.archiveHead},
		{http.MethodGet, "/containers/{id}/archive", s.archiveGet},
		{http.MethodPut, "/containers/{id}/archive", s.archivePut},

		// events, disk usage, the build cache there is none of
		{http.MethodGet, "/events", s.events},
		{http.MethodGet, "/system/df", s.systemDF},
		{http.MethodPost, "/build", s.imageBuild},
		{http.MethodPost, "/build/prune", s.buildPrune},
		{http.MethodPost, "/grpc", s.buildkitForward},
		{http.MethodPost, "/session", s.session},

		// volumes
		{http.MethodPost, "/volumes/create", s.volumeCreate},
		{http.MethodGet, "/volumes", s.volumeList},
		{http.MethodGet, "/volumes/{$}", s.volumeList},
		{http.MethodPost, "/volumes/prune", s.volumePrune},
		{http.MethodGet, "/volumes/{name}", s.volumeInspect},
		{http.MethodDelete, "/volumes/{name}", s.volumeRemove},

		// networks
		{http.MethodPost, "/networks/create", s.networkCreate},
		{http.MethodGet, "/networks", s.networkList},
		{http.MethodGet, "/networks/{$}", s.networkList},
		{http.MethodPost, "/networks/prune", s.networkPrune},
		{http.MethodGet, "/networks/{id}", s.networkInspect},
		{http.MethodDelete, "/networks/{id}", s.networkRemove},
		{http.MethodPost, "/networks/{id}/connect", s.networkConnect},
		{http.MethodPost, "/networks/{id}/disconnect", s.networkDisconnect},

		// swarm: forwarded to hutch-swarm while a node runs; otherwise
		// dockerd's answers on a node outside any swarm (swarm.go).
		{http.MethodPost, "/swarm/init", s.swarmRoute(swarmUnsupported)},
		{http.MethodPost, "/swarm/join", s.swarmRoute(swarmUnsupported)},
		{http.MethodPost, "/swarm/leave", s.swarmRoute(swarmLeave)},
		{http.MethodGet, "/swarm", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/swarm/unlockkey", s.swarmRoute(notSwarmManager)},
		{http.MethodPost, "/swarm/update", s.swarmRoute(notSwarmManager)},
		{http.MethodPost, "/swarm/unlock", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/services", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/services/{id}", s.swarmRoute(notSwarmManager)},
		{http.MethodPost, "/services/create", s.swarmRoute(notSwarmManager)},
		{http.MethodPost, "/services/{id}/update", s.swarmRoute(notSwarmManager)},
		{http.MethodDelete, "/services/{id}", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/services/{id}/logs", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/nodes", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/nodes/{id}", s.swarmRoute(notSwarmManager)},
		{http.MethodDelete, "/nodes/{id}", s.swarmRoute(notSwarmManager)},
		{http.MethodPost, "/nodes/{id}/update", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/tasks", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/tasks/{id}", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/tasks/{id}/logs", s.swarmRoute(notSwarmManager)},
		{http.MethodGet, "/secrets", since("1.25", s.swarmRoute(notSwarmManager))},
		{http.MethodPost, "/secrets/create", since("1.25", s.swarmRoute(notSwarmManager))},
		{http.MethodGet, "/secrets/{id}", since("1.25", s.swarmRoute(notSwarmManager))},
		{http.MethodDelete, "/secrets/{id}", since("1.25", s.swarmRoute(notSwarmManager))},
		{http.MethodPost, "/secrets/{id}/update", since("1.25", s.swarmRoute(notSwarmManager))},
		{http.MethodGet, "/configs", since("1.30", s.swarmRoute(notSwarmManager))},
		{http.MethodPost, "/configs/create", since("1.30", s.swarmRoute(notSwarmManager))},
		{http.MethodGet, "/configs/{id}", since("1.30", s.swarmRoute(notSwarmManager))},
		{http.MethodDelete, "/configs/{id}", since("1.30", s.swarmRoute(notSwarmManager))},
		{http.MethodPost, "/configs/{id}/update", since("1.30", s.swarmRoute(notSwarmManager))},

		// plugins: hutch has none and cannot install any (swarm.go). Names
		// hold slashes: /plugins/{rest...} dispatches on the last segment.
		{http.MethodGet, "/plugins", pluginList},
		{http.MethodGet, "/plugins/privileges", pluginsUnsupported},
		{http.MethodPost, "/plugins/pull", pluginsUnsupported},
		{http.MethodPost, "/plugins/create", pluginsUnsupported},
		{http.MethodGet, "/plugins/{rest...}", pluginRoute},
		{http.MethodPost, "/plugins/{rest...}", pluginRoute},
		{http.MethodDelete, "/plugins/{rest...}", pluginRoute},
	}
}

// endpoint wraps a route with what Docker does around every matched route:
// the common response headers, the API-version gate and error writing.
func (s *Server) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux lets "GET /x" match HEAD too; Docker routes are exact.
		if r.Method != rt.method {
			notFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Server", s.serverHeader)
		h.Set("Api-Version", MaxAPIVersion)
		h.Set("Ostype", "linux")
		h.Set("Docker-Experimental", s.experimental)

		if !checkRequestVersion(w, r) {
			return
		}
		if err := rt.h(w, r); err != nil {
			// Once a response has started (a stream, a hijacked attach), the
			// error can no longer reach the client, only the log.
			rec, _ := w.(*recorder)
			started := rec != nil && (rec.status != 0 || rec.hijacked)
			switch {
			case r.Context().Err() != nil && errors.Is(err, context.Canceled):
				// The client went away (a followed log it stopped
				// reading, as testcontainers does every few seconds):
				// Docker ends such streams quietly.
				s.log.DebugContext(r.Context(), "API client went away",
					"method", r.Method, "path", r.URL.Path)
			case started || errorStatus(err) >= http.StatusInternalServerError:
				s.log.ErrorContext(r.Context(), "API handler failed",
					"method", r.Method, "path", r.URL.Path, "err", err)
			}
			if !started {
				httpError(w, err)
			}
		}
	})
}

func options(w http.ResponseWriter, _ *http.Request) error {
	w.WriteHeader(http.StatusOK)
	return nil
}
