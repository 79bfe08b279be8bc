package swarm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// server serves Docker's swarm endpoints over c.
type server struct {
	c   *Cluster
	log *slog.Logger
}

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// newHandler lists every route hutch-swarm serves. The engine strips the
// API version from the path before it forwards a request.
func newHandler(c *Cluster, log *slog.Logger) http.Handler {
	s := &server{c: c, log: log}
	routes := []struct {
		pattern string
		h       handlerFunc
	}{
		{"GET " + InfoPath, s.info},
		{"DELETE " + NetworkPath + "{id}", s.networkRemove},
		{"POST /swarm/init", s.swarmInit},
		{"POST /swarm/join", s.swarmJoin},
		{"POST /swarm/leave", s.swarmLeave},
		{"GET /swarm", s.swarmInspect},
		{"POST /swarm/update", s.swarmUpdate},
		{"GET /swarm/unlockkey", s.swarmUnlockKey},
		{"POST /swarm/unlock", s.swarmUnlock},
		{"GET /nodes", s.nodeList},
		{"GET /nodes/{id}", s.nodeInspect},
		{"DELETE /nodes/{id}", s.nodeRemove},
		{"POST /nodes/{id}/update", s.nodeUpdate},
		{"GET /services", s.serviceList},
		{"POST /services/create", s.serviceCreate},
		{"GET /services/{id}", s.serviceInspect},
		{"POST /services/{id}/update", s.serviceUpdate},
		{"DELETE /services/{id}", s.serviceRemove},
		{"GET /services/{id}/logs", s.serviceLogs},
		{"GET /tasks", s.taskList},
		{"GET /tasks/{id}", s.taskInspect},
		{"GET /tasks/{id}/logs", s.taskLogs},
		{"GET /secrets", s.secretList},
		{"POST /secrets/create", s.secretCreate},
		{"GET /secrets/{id}", s.secretInspect},
		{"DELETE /secrets/{id}", s.secretRemove},
		{"POST /secrets/{id}/update", s.secretUpdate},
		{"GET /configs", s.configList},
		{"POST /configs/create", s.configCreate},
		{"GET /configs/{id}", s.configInspect},
		{"DELETE /configs/{id}", s.configRemove},
		{"POST /configs/{id}/update", s.configUpdate},
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := rt.h
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				s.writeError(w, r, err)
			}
		})
	}
	return mux
}

// statusOf is the one mapping of errors to HTTP statuses: SwarmKit's gRPC
// codes as Docker maps them, and errdefs classes.
func statusOf(err error) int {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		switch st.Code() {
		case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
			return http.StatusBadRequest
		case codes.NotFound:
			return http.StatusNotFound
		case codes.AlreadyExists:
			return http.StatusConflict
		case codes.PermissionDenied:
			return http.StatusForbidden
		case codes.Unavailable:
			return http.StatusServiceUnavailable
		case codes.Unimplemented:
			return http.StatusNotImplemented
		case codes.Unauthenticated:
			return http.StatusUnauthorized
		}
		return http.StatusInternalServerError
	}
	switch {
	case errdefs.IsInvalidArgument(err):
		return http.StatusBadRequest
	case errdefs.IsNotFound(err):
		return http.StatusNotFound
	case errdefs.IsConflict(err), errdefs.IsAlreadyExists(err):
		return http.StatusConflict
	case errdefs.IsUnavailable(err):
		return http.StatusServiceUnavailable
	case errdefs.IsNotImplemented(err):
		return http.StatusNotImplemented
	case errdefs.IsPermissionDenied(err):
		return http.StatusForbidden
	case errdefs.IsFailedPrecondition(err):
		return http.StatusPreconditionFailed
	}
	return http.StatusInternalServerError
}

func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	if code >= 500 {
		s.log.Warn("swarm request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	_ = writeJSON(w, code, map[string]string{"message": errMessage(err)})
}

// errMessage is the message clients print. Errors classed by errdefs
// carry it; gRPC errors keep SwarmKit's "rpc error: …" words, as Docker's
// do.
func errMessage(err error) string {
	var m interface{ Message() string }
	if errors.As(err, &m) && m.Message() != "" {
		if _, ok := status.FromError(err); !ok {
			return m.Message()
		}
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	return json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v; a bad one is a 400 as Docker words it.
func decode(r *http.Request, v any) error {
	if r.Body == nil {
		return errdefs.ErrInvalidArgument.WithMessage("request body is empty")
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errdefs.ErrInvalidArgument.WithMessage("invalid JSON: got EOF while reading request body")
		}
		return errdefs.ErrInvalidArgument.WithMessage("invalid JSON: " + err.Error())
	}
	return nil
}

// maxBody bounds a request's JSON: a secret or config is at most 500 KiB,
// base64 in JSON a third more.
const maxBody = 4 << 20

// version reads the required ?version= of an update.
func version(r *http.Request, what string) (uint64, error) {
	raw := r.URL.Query().Get("version")
	v, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid %s version '%s': %v", what, raw, err))
	}
	return v, nil
}

// boolQuery is Docker's reading of a boolean query value.
func boolQuery(r *http.Request, k string) bool {
	switch r.URL.Query().Get(k) {
	case "", "0", "no", "false", "none":
		return false
	}
	return true
}
