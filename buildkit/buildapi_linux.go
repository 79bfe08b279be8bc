package buildkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/platforms"
	controlapi "github.com/moby/buildkit/api/services/control"
	"github.com/moby/buildkit/control"
	"github.com/moby/buildkit/identity"
	"github.com/moby/buildkit/util/entitlements"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/proto"
)

// serveBuild is Docker's POST /build?version=2, as Docker's daemon serves
// it to API clients: the query becomes a Dockerfile solve, the context is
// the client's session (remote=client-session), a URL, or the request's
// body (served to the frontend over loopback, as Docker serves it); the
// output is Docker's JSON stream of BuildKit's status as aux messages
// (moby.buildkit.trace) and the image's ID (moby.image.id).
func serveBuild(ctrl *control.Controller, tmpDir string, w http.ResponseWriter, r *http.Request) {
	req, exporter, err := solveRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if req.FrontendAttrs["context"] == "" && r.URL.Query().Get("remote") != "client-session" {
		url, stop, err := serveBody(r.Body, tmpDir)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		defer stop()
		req.FrontendAttrs["context"] = url
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := &jsonStream{w: w}
	eg, ctx := errgroup.WithContext(r.Context())
	eg.Go(func() error {
		resp, err := ctrl.Solve(ctx, req)
		if err != nil {
			return err
		}
		if exporter != mobyExporter {
			return nil
		}
		id := resp.ExporterResponse["containerimage.digest"]
		return out.aux("moby.image.id", map[string]string{"ID": id})
	})
	statusCtx, stopStatus := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStatus()
	eg.Go(func() error {
		stream := &sendStream[controlapi.StatusResponse]{ctx: statusCtx, send: func(sr *controlapi.StatusResponse) {
			if b, err := proto.Marshal(sr); err == nil {
				_ = out.aux("moby.buildkit.trace", b)
			}
		}}
		return ctrl.Status(&controlapi.StatusRequest{Ref: req.Ref}, stream)
	})
	if err := eg.Wait(); err != nil {
		out.error(err)
	}
}

// solveRequest turns the query of POST /build into BuildKit's solve, as
// Docker's daemon does; it returns the exporter's type too.
func solveRequest(r *http.Request) (*controlapi.SolveRequest, string, error) {
	q := r.URL.Query()
	attrs := map[string]string{}
	if v := q.Get("target"); v != "" {
		attrs["target"] = v
	}
	if v := q.Get("dockerfile"); v != "" && v != "." {
		attrs["filename"] = v
	}
	if v := q.Get("remote"); v != "" && v != "client-session" {
		attrs["context"] = v
	}
	var buildArgs map[string]*string
	if err := jsonQuery(q.Get("buildargs"), &buildArgs); err != nil {
		return nil, "", fmt.Errorf("invalid buildargs: %w", err)
	}
	for k, v := range buildArgs {
		if v != nil {
			attrs["build-arg:"+k] = *v
		}
	}
	var labels map[string]string
	if err := jsonQuery(q.Get("labels"), &labels); err != nil {
		return nil, "", fmt.Errorf("invalid labels: %w", err)
	}
	for k, v := range labels {
		attrs["label:"+k] = v
	}
	var cacheFrom []string
	if err := jsonQuery(q.Get("cachefrom"), &cacheFrom); err != nil {
		return nil, "", fmt.Errorf("invalid cachefrom: %w", err)
	}
	attrs["cache-from"] = strings.Join(cacheFrom, ",")
	if b, _ := strconv.ParseBool(q.Get("nocache")); b {
		attrs["no-cache"] = ""
	}
	attrs["image-resolve-mode"] = "local"
	if b, _ := strconv.ParseBool(q.Get("pull")); b {
		attrs["image-resolve-mode"] = "pull"
	}
	if p := q.Get("platform"); p != "" {
		if _, err := platforms.Parse(p); err != nil {
			return nil, "", err
		}
		attrs["platform"] = p
	}
	var ents []string
	switch nm := q.Get("networkmode"); nm {
	case "host", "none":
		attrs["force-network-mode"] = nm
		if nm == "host" {
			ents = append(ents, string(entitlements.EntitlementNetworkHost))
		}
	case "", "default":
	default:
		return nil, "", fmt.Errorf("network mode %q not supported by buildkit", nm)
	}
	var hosts []string
	for _, h := range q["extrahosts"] {
		name, ip, ok := strings.Cut(h, ":")
		if !ok || name == "" || ip == "" {
			return nil, "", fmt.Errorf("invalid host %s", h)
		}
		hosts = append(hosts, name+"="+ip)
	}
	if len(hosts) > 0 {
		attrs["add-hosts"] = strings.Join(hosts, ",")
	}
	if v := q.Get("shmsize"); v != "" && v != "0" {
		attrs["shm-size"] = v
	}
	exporter, exportAttrs := mobyExporter, map[string]string{}
	var outputs []struct {
		Type  string
		Attrs map[string]string
	}
	if err := jsonQuery(q.Get("outputs"), &outputs); err != nil {
		return nil, "", fmt.Errorf("invalid outputs: %w", err)
	}
	switch len(outputs) {
	case 0:
	case 1:
		exporter, exportAttrs = outputs[0].Type, outputs[0].Attrs
		if exportAttrs == nil {
			exportAttrs = map[string]string{}
		}
	default:
		return nil, "", errors.New("multiple outputs not supported")
	}
	if names := tagNames(strings.Join(q["t"], ",")); len(names) > 0 && (exporter == mobyExporter || exporter == "image") {
		exportAttrs["name"] = strings.Join(names, ",")
	}
	req := &controlapi.SolveRequest{
		Ref:           identity.NewID(),
		Frontend:      "dockerfile.v0",
		FrontendAttrs: attrs,
		Session:       q.Get("session"),
		Cache:         &controlapi.CacheOptions{},
		Entitlements:  ents,
	}
	if exporter != "cacheonly" {
		req.Exporters = []*controlapi.Exporter{{Type: exporter, Attrs: exportAttrs}}
	}
	if v := buildArgs["BUILDKIT_INLINE_CACHE"]; v != nil {
		if b, _ := strconv.ParseBool(*v); b {
			req.Cache.Exports = append(req.Cache.Exports, &controlapi.CacheOptionsEntry{Type: "inline"})
		}
	}
	return req, exporter, nil
}

func jsonQuery(v string, dst any) error {
	if v == "" {
		return nil
	}
	return json.Unmarshal([]byte(v), dst)
}

// serveBody serves a build context sent as the request's body once, at an
// unguessable URL on loopback, for the frontend to fetch (an HTTP context
// that is an archive is unpacked).
func serveBody(body io.Reader, tmpDir string) (string, func(), error) {
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(tmpDir, "context-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, body); err != nil {
		cleanup()
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return "", nil, err
	}
	path := "/" + identity.NewID() + "/context"
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		st, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, "context", st.ModTime(), io.NewSectionReader(f, 0, st.Size()))
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + path, func() { srv.Close(); cleanup() }, nil
}

// jsonStream writes Docker's JSON progress messages, flushed one by one.
type jsonStream struct {
	mu sync.Mutex
	w  http.ResponseWriter
}

func (s *jsonStream) write(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := json.NewEncoder(s.w).Encode(v); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

func (s *jsonStream) aux(id string, v any) error {
	return s.write(map[string]any{"id": id, "aux": v})
}

func (s *jsonStream) error(err error) {
	_ = s.write(map[string]any{"errorDetail": map[string]string{"message": err.Error()}, "error": err.Error()})
}
