package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	buildtypes "github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/build"
)

// BuildBackend builds images with the classic builder (POST /build).
type BuildBackend interface {
	Build(ctx context.Context, req engine.BuildRequest, buildContext io.Reader, out build.Output) (string, error)
}

// imageBuild is POST /build (docker build without BuildKit): the body is
// the context, a tar; the output is Docker's JSON progress stream, ending
// with the image's ID as aux.
func (s *Server) imageBuild(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Get("version") == string(buildtypes.BuilderBuildKit) {
		return s.buildkitForward(w, r)
	}
	req, err := buildRequest(r)
	if err != nil {
		return err
	}
	if req.Auth, err = registryConfig(r); err != nil {
		return err
	}
	stream := newJSONStream(w)
	// Clients before API 1.30 get no aux messages from Docker.
	aux := !versionLess(APIVersion(r.Context()), "1.30")
	_, err = s.backend.Build(r.Context(), req, r.Body, buildOutput{stream, aux})
	return stream.finish(err)
}

// buildRequest reads the query of POST /build. Options of BuildKit are
// refused rather than ignored.
func buildRequest(r *http.Request) (engine.BuildRequest, error) {
	q := r.URL.Query()
	req := engine.BuildRequest{
		DockerfileName: q.Get("dockerfile"),
		Remote:         q.Get("remote"),
		Request: build.Request{
			Target:      q.Get("target"),
			Pull:        queryBool(r, "pull"),
			NoCache:     queryBool(r, "nocache"),
			Quiet:       queryBool(r, "q"),
			Remove:      queryBoolDefault(r, "rm", true),
			ForceRemove: queryBool(r, "forcerm"),
			NetworkMode: q.Get("networkmode"),
		},
	}
	switch {
	case queryBool(r, "squash"):
		return req, errdefs.ErrInvalidArgument.WithMessage("squash is only supported with experimental mode")
	}
	platform, err := specifierPlatform(r)
	if err != nil {
		return req, err
	}
	if platform != nil && platform.OS != "linux" {
		return req, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("platform %q is not supported: this daemon builds for linux", q.Get("platform")))
	}
	for _, t := range q["t"] {
		named, err := reference.ParseNormalizedNamed(t)
		if err != nil {
			return req, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid reference format: %s", t))
		}
		if _, ok := named.(reference.Digested); ok {
			return req, errdefs.ErrInvalidArgument.WithMessage("invalid reference format: a tag cannot hold a digest: " + t)
		}
		req.Tags = append(req.Tags, t)
	}
	if v := q.Get("buildargs"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.BuildArgs); err != nil {
			return req, errdefs.ErrInvalidArgument.WithMessage("invalid buildargs: " + err.Error())
		}
	}
	if v := q.Get("labels"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.Labels); err != nil {
			return req, errdefs.ErrInvalidArgument.WithMessage("invalid labels: " + err.Error())
		}
	}
	for _, h := range q["extrahosts"] {
		req.ExtraHosts = append(req.ExtraHosts, strings.FieldsFunc(h, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return req, nil
}

// buildOutput writes the builder's output as Docker's stream; aux says
// whether the client reads stages' image IDs.
type buildOutput struct {
	s   *jsonStream
	aux bool
}

func (o buildOutput) Stream(text string)            { o.s.send(jsonstream.Message{Stream: text}) }
func (o buildOutput) Progress(m jsonstream.Message) { o.s.send(m) }

func (o buildOutput) ImageID(id string) {
	if !o.aux {
		return
	}
	raw, _ := json.Marshal(buildtypes.Result{ID: id})
	msg := json.RawMessage(raw)
	o.s.send(jsonstream.Message{Aux: &msg})
}

// registryConfig decodes X-Registry-Config: the client's credentials by
// registry (base64url JSON), for the pulls of FROM. It is never logged.
func registryConfig(r *http.Request) (map[string]registry.AuthConfig, error) {
	h := r.Header.Get("X-Registry-Config")
	if h == "" {
		return nil, nil
	}
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.StdEncoding, base64.RawURLEncoding, base64.RawStdEncoding} {
		if raw, err = enc.DecodeString(h); err == nil {
			break
		}
	}
	var auth map[string]registry.AuthConfig
	if err == nil {
		err = json.Unmarshal(raw, &auth)
	}
	if err != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage("invalid X-Registry-Config header: it must be base64url-encoded JSON of credentials by registry")
	}
	return auth, nil
}
