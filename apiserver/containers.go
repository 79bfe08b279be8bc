package apiserver

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/container"
)

// ContainerBackend is the container half of the engine.
type ContainerBackend interface {
	ContainerCreate(ctx context.Context, req engine.CreateRequest) (containertypes.CreateResponse, error)
	ContainerStart(ctx context.Context, ref string) error
	ContainerStop(ctx context.Context, ref string, req engine.StopRequest) error
	ContainerRestart(ctx context.Context, ref string, req engine.StopRequest) error
	ContainerKill(ctx context.Context, ref, signal string) error
	ContainerWait(ctx context.Context, ref string, req engine.WaitRequest) (<-chan container.WaitResult, error)
	ContainerLogs(ctx context.Context, ref string, req engine.LogsRequest, stdout, stderr io.Writer) error
	ContainerInspect(ctx context.Context, ref string) (containertypes.InspectResponse, error)
	ContainerList(ctx context.Context, req engine.ListRequest) ([]containertypes.Summary, error)
	// ContainerSize gives SizeRw and SizeRootFs (size=1 of list and inspect).
	ContainerSize(ctx context.Context, ref string) (rw, rootfs int64, err error)
	ContainerRemove(ctx context.Context, ref string, req engine.RemoveRequest) error
	// RemoveLink is rm --link: name is /parent/alias.
	RemoveLink(ctx context.Context, name string) error
	ContainerRename(ctx context.Context, ref, name string) error
	ContainerPrune(ctx context.Context, filters string) (containertypes.PruneReport, error)
	ContainerAttach(ctx context.Context, ref string, req engine.AttachRequest, stdin io.Reader, stdout, stderr io.Writer) error
	ContainerResize(ctx context.Context, ref string, height, width uint16) error
	ContainerTop(ctx context.Context, ref, psArgs string) (containertypes.TopResponse, error)
	ContainerPause(ctx context.Context, ref string) error
	// ContainerUpdate changes resources and the restart policy.
	ContainerUpdate(ctx context.Context, ref string, u containertypes.UpdateConfig) (containertypes.UpdateResponse, error)
	ContainerUnpause(ctx context.Context, ref string) error
}

func (s *Server) containerCreate(w http.ResponseWriter, r *http.Request) error {
	var req containertypes.CreateRequest
	if err := decodeRequiredJSON(w, r, &req); err != nil {
		return err
	}
	if err := adaptCreateRequest(APIVersion(r.Context()), &req); err != nil {
		return err
	}
	if hc := req.HostConfig; hc != nil && versionLess(APIVersion(r.Context()), "1.48") {
		for _, m := range hc.Mounts {
			if m.Type == mount.TypeImage {
				return errdefs.ErrInvalidArgument.WithMessage(`Mount type "Image" needs API v1.48 or newer`)
			}
		}
	}
	if req.NetworkingConfig != nil && versionLess(APIVersion(r.Context()), "1.48") {
		// Before API 1.48 endpoints had no gw-priority: Docker drops
		// what an older client sends there.
		for _, ep := range req.NetworkingConfig.EndpointsConfig {
			if ep != nil {
				ep.GwPriority = 0
			}
		}
	}
	resp, err := s.backend.ContainerCreate(r.Context(), engine.CreateRequest{
		Name:             r.URL.Query().Get("name"),
		Config:           req.Config,
		HostConfig:       req.HostConfig,
		NetworkingConfig: req.NetworkingConfig,
		Platform:         r.URL.Query().Get("platform"),
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, resp)
}

// adaptCreateRequest gives a create request of an older API version the
// meaning it had then, as Docker's API server does: before 1.40 a
// container's IPC namespace is shareable unless it asks otherwise, and
// before 1.44 a container is created on one network at most.
func adaptCreateRequest(version string, req *containertypes.CreateRequest) error {
	if versionLess(version, "1.40") {
		if req.HostConfig == nil {
			req.HostConfig = &containertypes.HostConfig{}
		}
		if req.HostConfig.IpcMode.IsEmpty() {
			req.HostConfig.IpcMode = containertypes.IPCModeShareable
		}
	}
	if nc := req.NetworkingConfig; nc != nil && versionLess(version, "1.44") && len(nc.EndpointsConfig) > 1 {
		names := slices.Sorted(maps.Keys(nc.EndpointsConfig))
		return errdefs.ErrInvalidArgument.WithMessage("Container cannot be created with multiple network endpoints: " + strings.Join(names, ", "))
	}
	return migrateIfaceSysctls(version, req)
}

func (s *Server) containerStart(w http.ResponseWriter, r *http.Request) error {
	if err := startCheckpoint(r); err != nil {
		return err
	}
	if err := s.backend.ContainerStart(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func stopRequest(r *http.Request) (engine.StopRequest, error) {
	req := engine.StopRequest{Signal: r.URL.Query().Get("signal")}
	if t := r.URL.Query().Get("t"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil {
			return req, errdefs.ErrInvalidArgument.WithMessage("invalid value for t: " + t)
		}
		req.Timeout = &n
	}
	return req, nil
}

func (s *Server) containerStop(w http.ResponseWriter, r *http.Request) error {
	req, err := stopRequest(r)
	if err != nil {
		return err
	}
	if err := s.backend.ContainerStop(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) containerRestart(w http.ResponseWriter, r *http.Request) error {
	req, err := stopRequest(r)
	if err != nil {
		return err
	}
	if err := s.backend.ContainerRestart(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) containerKill(w http.ResponseWriter, r *http.Request) error {
	if err := s.backend.ContainerKill(r.Context(), r.PathValue("id"), r.URL.Query().Get("signal")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// waitBody is the wait answer; Docker's clients accept "Error":null, and
// Docker's API documentation shows it.
type waitBody struct {
	StatusCode int64
	Error      *containertypes.WaitExitError
}

// containerWait registers the waiter before it answers anything, then sends
// the headers at once (so that a client may start the container) and the
// body when the condition is met.
func (s *Server) containerWait(w http.ResponseWriter, r *http.Request) error {
	ch, err := s.backend.ContainerWait(r.Context(), r.PathValue("id"), engine.WaitRequest{Condition: r.URL.Query().Get("condition")})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	res, ok := <-ch
	if !ok {
		return nil // the client went away
	}
	body := waitBody{StatusCode: int64(res.ExitCode)}
	if res.Error != "" {
		body.Error = &containertypes.WaitExitError{Message: res.Error}
	}
	return writeJSONBody(w, body)
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref := r.PathValue("id")
	req := engine.LogsRequest{
		Stdout:     queryBool(r, "stdout"),
		Stderr:     queryBool(r, "stderr"),
		Follow:     queryBool(r, "follow"),
		Timestamps: queryBool(r, "timestamps"),
		Details:    queryBool(r, "details"),
		Tail:       q.Get("tail"),
		Since:      q.Get("since"),
		Until:      q.Get("until"),
	}
	// Docker's words and order: the streams are checked first, then the
	// container looked up.
	if !req.Stdout && !req.Stderr {
		return errdefs.ErrInvalidArgument.WithMessage("You must choose at least one stream")
	}
	c, err := s.backend.ContainerInspect(r.Context(), ref)
	if err != nil {
		return err
	}
	tty := c.Config != nil && c.Config.Tty
	ct := "application/vnd.docker.multiplexed-stream"
	if tty {
		ct = "application/vnd.docker.raw-stream"
	}
	fw := &flushWriter{w: w}
	req.Begin = func() {
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		fw.flush()
	}
	stdout, stderr := streams(fw, tty)
	return s.backend.ContainerLogs(r.Context(), ref, req, stdout, stderr)
}

// streams frames stdout and stderr with stdcopy's 8-byte header, or sends
// them raw for a tty (where there is only one stream).
func streams(w io.Writer, tty bool) (stdout, stderr io.Writer) {
	if tty {
		return w, w
	}
	return newFrameWriters(w)
}

// flushWriter flushes after every write: logs -f and attach are read live.
type flushWriter struct {
	w io.Writer
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.flush()
	return n, err
}

func (f *flushWriter) flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (s *Server) containerInspect(w http.ResponseWriter, r *http.Request) error {
	c, err := s.backend.ContainerInspect(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if queryBool(r, "size") {
		// As Docker: a size that cannot be had is left out, not an error.
		if rw, rootfs, err := s.backend.ContainerSize(r.Context(), c.ID); err == nil {
			c.SizeRw, c.SizeRootFs = &rw, &rootfs
		}
	}
	return writeJSON(w, http.StatusOK, inspectForVersion(r, c))
}

func (s *Server) containerList(w http.ResponseWriter, r *http.Request) error {
	req := engine.ListRequest{All: queryBool(r, "all"), Filters: r.URL.Query().Get("filters")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("invalid value for limit: " + l)
		}
		req.Limit = n
	}
	list, err := s.backend.ContainerList(r.Context(), req)
	if err != nil {
		return err
	}
	if queryBool(r, "size") {
		for i := range list {
			if rw, rootfs, err := s.backend.ContainerSize(r.Context(), list[i].ID); err == nil {
				list[i].SizeRw, list[i].SizeRootFs = rw, rootfs
			}
		}
	}
	// The health summary came with API 1.52.
	if versionLess(APIVersion(r.Context()), "1.52") {
		for i := range list {
			list[i].Health = nil
		}
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) containerRemove(w http.ResponseWriter, r *http.Request) error {
	req := engine.RemoveRequest{Force: queryBool(r, "force"), Volumes: queryBool(r, "v")}
	if queryBool(r, "link") {
		return s.removeLink(w, r, r.PathValue("id"))
	}
	if err := s.backend.ContainerRemove(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// linkRemove is DELETE /containers//parent/alias?link=1, docker rm --link
// /parent/alias (linkPath takes the double slash away).
func (s *Server) linkRemove(w http.ResponseWriter, r *http.Request) error {
	name := "/" + r.PathValue("parent") + "/" + r.PathValue("alias")
	if !queryBool(r, "link") {
		return errdefs.ErrNotFound.WithMessage("No such container: " + name)
	}
	return s.removeLink(w, r, name)
}

func (s *Server) removeLink(w http.ResponseWriter, r *http.Request, name string) error {
	if err := s.backend.RemoveLink(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// linkPath routes DELETE /containers//parent/alias (the CLI's path for a
// link name, which starts with "/") as /containers/parent/alias: the
// ServeMux would answer the double slash with a redirect, which API
// clients do not follow for a DELETE.
func linkPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/containers//"); ok && r.Method == http.MethodDelete {
			u := *r.URL
			u.Path, u.RawPath = "/containers/"+rest, ""
			r.URL = &u
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) containerRename(w http.ResponseWriter, r *http.Request) error {
	if err := s.backend.ContainerRename(r.Context(), r.PathValue("id"), r.URL.Query().Get("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) containerPrune(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.backend.ContainerPrune(r.Context(), r.URL.Query().Get("filters"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (s *Server) containerResize(w http.ResponseWriter, r *http.Request) error {
	h, wd, err := terminalSize(r)
	if err != nil {
		return err
	}
	if err := s.backend.ContainerResize(r.Context(), r.PathValue("id"), h, wd); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) containerTop(w http.ResponseWriter, r *http.Request) error {
	top, err := s.backend.ContainerTop(r.Context(), r.PathValue("id"), r.URL.Query().Get("ps_args"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, top)
}

func (s *Server) containerUpdate(w http.ResponseWriter, r *http.Request) error {
	var u containertypes.UpdateConfig
	if err := decodeJSON(w, r, &u); err != nil {
		return err
	}
	resp, err := s.backend.ContainerUpdate(r.Context(), r.PathValue("id"), u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}

func (s *Server) containerPause(w http.ResponseWriter, r *http.Request) error {
	if err := s.backend.ContainerPause(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) containerUnpause(w http.ResponseWriter, r *http.Request) error {
	if err := s.backend.ContainerUnpause(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
