package apiserver

import (
	"net/http"

	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/buildkit/proxy"
	"github.com/hutch-engine/hutch/engine/images"
)

// imageImport is POST /images/create?fromSrc=… (docker import): the rootfs
// is the body ("-") or a URL. The reply is a JSON stream ending with the
// new image's ID.
func (s *Server) imageImport(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	platform, err := specifierPlatform(r)
	if err != nil {
		return err
	}
	stream := newJSONStream(w)
	err = s.backend.ImageImport(r.Context(), images.ImportRequest{
		Source:   q.Get("fromSrc"),
		Repo:     q.Get("repo"),
		Tag:      q.Get("tag"),
		Message:  q.Get("message"),
		Changes:  q["changes"],
		Platform: formatPlatform(platform),
	}, r.Body, stream.send)
	return stream.finish(err)
}

// imageLoad is POST /images/load (docker load). Docker's default is quiet.
// Only a bad parameter is an HTTP error: whatever goes wrong with the
// archive is answered 200 with the error in the stream, as Docker answers
// it, in quiet mode too.
func (s *Server) imageLoad(w http.ResponseWriter, r *http.Request) error {
	plats, err := platformList(r)
	if err != nil {
		return err
	}
	stream := newJSONStream(w)
	req := images.LoadRequest{
		Quiet:     queryBoolDefault(r, "quiet", true),
		Platforms: plats,
		// hutch-buildkit loads what a build made: the engine tells of
		// it as the image's creation, as Docker's BuildKit exporter does.
		Built: r.Header.Get(proxy.LoadOriginHeader) == "build",
	}
	err = s.backend.ImageLoad(r.Context(), r.Body, req, stream.send)
	if err != nil {
		stream.begin()
	}
	return stream.finish(err)
}

// imageSaveOne is GET /images/{name}/get, imageSaveMany GET
// /images/get?names=…&names=… (docker save).
func (s *Server) imageSaveOne(w http.ResponseWriter, r *http.Request, name string) error {
	return s.imageSave(w, r, []string{name})
}

func (s *Server) imageSaveMany(w http.ResponseWriter, r *http.Request) error {
	return s.imageSave(w, r, r.URL.Query()["names"])
}

func (s *Server) imageSave(w http.ResponseWriter, r *http.Request, names []string) error {
	plats, err := platformList(r)
	if err != nil {
		return err
	}
	tw := &lazyWriter{w: w, contentType: "application/x-tar"}
	err = s.backend.ImageSave(r.Context(), names, plats, tw)
	if err != nil && tw.started {
		// A truncated tar must not look complete: drop the connection.
		s.log.ErrorContext(r.Context(), "docker save failed mid-stream", "names", names, "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}

// lazyWriter sends the status and Content-Type with the first byte, so
// that a failure before it is still an HTTP error.
type lazyWriter struct {
	w           http.ResponseWriter
	contentType string
	started     bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", l.contentType)
		l.w.WriteHeader(http.StatusOK)
	}
	return l.w.Write(p)
}

// Flush sends what was written so far.
func (l *lazyWriter) Flush() {
	if l.started {
		_ = http.NewResponseController(l.w).Flush()
	}
}

// auth is POST /auth (docker login): the credentials are checked against
// the registry; rejected ones get 401 with the registry's message.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) error {
	var cfg registry.AuthConfig
	if err := decodeJSON(w, r, &cfg); err != nil {
		return err
	}
	resp, err := s.backend.RegistryLogin(r.Context(), cfg)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}
