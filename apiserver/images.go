package apiserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/images"
)

// ImageBackend is the image half of the engine.
type ImageBackend interface {
	ImagePull(ctx context.Context, req images.PullRequest, progress func(jsonstream.Message)) error
	// ImagePush pushes, calling progress with Docker's stream; errors
	// before the first message are the caller's to answer as HTTP errors.
	ImagePush(ctx context.Context, req images.PushRequest, progress func(jsonstream.Message)) error
	ImageList(ctx context.Context, req images.ListRequest) ([]image.Summary, error)
	// ImageInspect and ImageHistory find ref; platform, when set, is the
	// platform it must be of.
	ImageInspect(ctx context.Context, ref string, platform *ocispec.Platform) (images.Detail, error)
	ImageHistory(ctx context.Context, ref string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error)
	// ImageAttestations lists the in-toto statements attached to ref's
	// image; nil when it has none.
	ImageAttestations(ctx context.Context, ref string, req images.AttestationRequest) ([]image.AttestationStatement, error)
	ImageTag(ctx context.Context, ref, repo, tag string) error
	ImageRemove(ctx context.Context, ref string, req images.RemoveRequest) ([]image.DeleteResponse, error)
	ImagePrune(ctx context.Context, filters string) (image.PruneReport, error)
	ImageImport(ctx context.Context, req images.ImportRequest, rootfs io.Reader, progress func(jsonstream.Message)) error
	ImageLoad(ctx context.Context, archive io.Reader, req images.LoadRequest, progress func(jsonstream.Message)) error
	// ImageSave writes the archive to w; nothing is written before every
	// name is resolved.
	ImageSave(ctx context.Context, names []string, platforms []ocispec.Platform, w io.Writer) error
	RegistryLogin(ctx context.Context, auth registry.AuthConfig) (registry.AuthResponse, error)
	// DistributionInspect asks name's registry for its manifest's
	// descriptor and platforms.
	DistributionInspect(ctx context.Context, name string, auth registry.AuthConfig) (registry.DistributionInspect, error)
	// SearchImages searches term's registry (limit 0: the default),
	// filtered by filters (Docker's JSON).
	SearchImages(ctx context.Context, term string, limit int, filters string, auth registry.AuthConfig) ([]registry.SearchResult, error)
}

// Docker routes image names with "{name:.*}": names hold slashes
// ("127.0.0.1:5000/library/busybox:latest"). ServeMux wildcards cannot end
// a pattern with a fixed suffix after a multi-segment wildcard, so
// "/images/{rest...}" takes the rest of the path and the last segment
// chooses the operation. Fixed routes (/images/json, /images/create…) are
// more specific and win over it.

// imageOps are the operations under /images/{name}/, by method and suffix.
func (s *Server) imageOps() map[string]func(w http.ResponseWriter, r *http.Request, name string) error {
	return map[string]func(http.ResponseWriter, *http.Request, string) error{
		"GET json":         s.imageInspect,
		"GET history":      s.imageHistory,
		"GET attestations": s.imageAttestations,
		"GET get":          s.imageSaveOne,
		"POST tag":         s.imageTag,
		"POST push":        s.imagePush,
	}
}

// imageRoute dispatches GET and POST /images/{rest...}; DELETE
// /images/{rest...} is imageRemove of the whole rest.
func (s *Server) imageRoute(w http.ResponseWriter, r *http.Request) error {
	rest := r.PathValue("rest")
	if r.Method == http.MethodDelete {
		return s.imageRemove(w, r, rest)
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		notFound(w, r)
		return nil
	}
	h := s.imageOps()[r.Method+" "+rest[i+1:]]
	if h == nil {
		notFound(w, r)
		return nil
	}
	return h(w, r, rest[:i])
}

// registryAuth decodes X-Registry-Auth (base64url JSON, standard base64
// accepted). It is never logged.
func registryAuth(r *http.Request) (registry.AuthConfig, error) {
	h := r.Header.Get(registry.AuthHeader)
	if h == "" {
		return registry.AuthConfig{}, nil
	}
	ac, err := authconfig.Decode(h)
	if err != nil || ac == nil {
		return registry.AuthConfig{}, errdefs.ErrInvalidArgument.WithMessage("invalid X-Registry-Auth header: it must be base64url-encoded JSON with username, password and serveraddress")
	}
	return *ac, nil
}

// imagesCreate is POST /images/create: a pull (fromImage) or an import
// (fromSrc).
func (s *Server) imagesCreate(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if q.Get("fromImage") == "" {
		if q.Get("fromSrc") != "" {
			return s.imageImport(w, r)
		}
		return errdefs.ErrInvalidArgument.WithMessage("fromImage or fromSrc is required")
	}
	auth, err := registryAuth(r)
	if err != nil {
		return err
	}
	platform, err := specifierPlatform(r)
	if err != nil {
		return err
	}
	stream := newJSONStream(w)
	err = s.backend.ImagePull(r.Context(), images.PullRequest{
		FromImage: q.Get("fromImage"),
		Tag:       q.Get("tag"),
		Platform:  formatPlatform(platform),
		Auth:      auth,
	}, stream.send)
	return stream.finish(err)
}

// summaryV143 is a list item for clients older than API 1.44, which still
// read VirtualSize.
type summaryV143 struct {
	image.Summary
	VirtualSize int64 `json:"VirtualSize"`
}

// imageList is GET /images/json, shaped for the request's API version as
// Docker does.
func (s *Server) imageList(w http.ResponseWriter, r *http.Request) error {
	v := APIVersion(r.Context())
	if !versionLess(v, "1.54") && queryBool(r, "identity") && !queryBool(r, "manifests") {
		return invalidVerbatim{errors.New("conflicting options: identity requires manifests=1")}
	}
	imgs, err := s.backend.ImageList(r.Context(), images.ListRequest{
		All:        queryBool(r, "all"),
		Filters:    r.URL.Query().Get("filters"),
		SharedSize: !versionLess(v, "1.42") && queryBool(r, "shared-size"),
		Manifests:  !versionLess(v, "1.47") && queryBool(r, "manifests"),
	})
	if err != nil {
		return err
	}
	for i := range imgs {
		img := &imgs[i]
		switch {
		case versionLess(v, "1.43"):
			if len(img.RepoTags) == 0 && len(img.RepoDigests) == 0 {
				img.RepoTags, img.RepoDigests = []string{"<none>:<none>"}, []string{"<none>@<none>"}
			}
		default:
			img.RepoTags, img.RepoDigests = nonNil(img.RepoTags), nonNil(img.RepoDigests)
		}
		if versionLess(v, "1.51") {
			img.Containers = -1 // not counted by Docker before 1.51
		}
	}
	if versionLess(v, "1.44") {
		old := make([]summaryV143, len(imgs))
		for i, img := range imgs {
			old[i] = summaryV143{Summary: img, VirtualSize: img.Size}
		}
		return writeJSON(w, http.StatusOK, old)
	}
	return writeJSON(w, http.StatusOK, imgs)
}

func (s *Server) imageInspect(w http.ResponseWriter, r *http.Request, name string) error {
	v := APIVersion(r.Context())
	platform, err := queryJSONPlatform(r, "platform", "1.49")
	if err != nil {
		return err
	}
	if platform != nil && !versionLess(v, "1.48") && queryBool(r, "manifests") {
		return invalidVerbatim{errors.New("conflicting options: manifests and platform options cannot both be set")}
	}
	resp, err := s.backend.ImageInspect(r.Context(), name, platform)
	if err != nil {
		return err
	}
	if versionLess(v, "1.48") || !queryBool(r, "manifests") {
		resp.Manifests = nil
	}
	if !versionLess(v, "1.45") {
		return writeJSON(w, http.StatusOK, resp)
	}
	// Before API 1.45 Docker always sends Container and ContainerConfig,
	// an empty config for an image that records none: docker-compose v1
	// indexes ContainerConfig when it recreates a container.
	legacy := legacyImageInspect{Detail: resp, Container: resp.Container, ContainerConfig: resp.ContainerConfig}
	if legacy.ContainerConfig == nil {
		legacy.ContainerConfig = &container.Config{}
	}
	if versionLess(v, "1.44") {
		legacy.VirtualSize = &resp.Size
	}
	return writeJSON(w, http.StatusOK, legacy)
}

// legacyImageInspect is GET /images/{name}/json before API 1.45.
type legacyImageInspect struct {
	images.Detail
	VirtualSize     *int64            `json:"VirtualSize,omitempty"`
	Container       string            `json:"Container"`
	ContainerConfig *container.Config `json:"ContainerConfig"`
}

// imageAttestations is GET /images/{name}/attestations (API 1.55): the
// in-toto statements of the image's platform (one JSON platform at most;
// the parameter repeats only for the wire shape to grow), of the
// predicate types asked for (type, repeatable), with their bodies when
// statement is true. No attestations is an empty list.
func (s *Server) imageAttestations(w http.ResponseWriter, r *http.Request, name string) error {
	if versionLess(APIVersion(r.Context()), "1.55") {
		return tooOldFor("/images/{name:.*}/attestations", "1.55")
	}
	q := r.URL.Query()
	var req images.AttestationRequest
	if ps := q["platform"]; len(ps) > 0 {
		if len(ps) > 1 {
			return invalidVerbatim{errors.New("only one platform value is currently supported")}
		}
		if ps[0] != "" {
			p, err := jsonPlatform(ps[0])
			if err != nil {
				return err
			}
			req.Platform = p
		}
	}
	for _, t := range q["type"] {
		if t = strings.TrimSpace(t); t != "" {
			req.PredicateTypes = append(req.PredicateTypes, t)
		}
	}
	req.Statement = queryBool(r, "statement")
	out, err := s.backend.ImageAttestations(r.Context(), name, req)
	if err != nil {
		return err
	}
	if out == nil {
		out = []image.AttestationStatement{}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) imageHistory(w http.ResponseWriter, r *http.Request, name string) error {
	platform, err := queryJSONPlatform(r, "platform", "1.48")
	if err != nil {
		return err
	}
	h, err := s.backend.ImageHistory(r.Context(), name, platform)
	if err != nil {
		return err
	}
	if h == nil {
		h = []image.HistoryResponseItem{}
	}
	return writeJSON(w, http.StatusOK, h)
}

func (s *Server) imageTag(w http.ResponseWriter, r *http.Request, name string) error {
	q := r.URL.Query()
	if err := s.backend.ImageTag(r.Context(), name, q.Get("repo"), q.Get("tag")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// imagePush is POST /images/{name}/push?tag=… (docker push), with the
// credentials in X-Registry-Auth as for a pull.
func (s *Server) imagePush(w http.ResponseWriter, r *http.Request, name string) error {
	auth, err := registryAuth(r)
	if err != nil {
		return err
	}
	platform, err := queryJSONPlatform(r, "platform", "1.46")
	if err != nil {
		return err
	}
	stream := newJSONStream(w)
	err = s.backend.ImagePush(r.Context(), images.PushRequest{
		Name:     name,
		Tag:      r.URL.Query().Get("tag"),
		Auth:     auth,
		Platform: platform,
	}, stream.send)
	return stream.finish(err)
}

func (s *Server) imageRemove(w http.ResponseWriter, r *http.Request, name string) error {
	plats, err := removePlatforms(r)
	if err != nil {
		return err
	}
	recs, err := s.backend.ImageRemove(r.Context(), name, images.RemoveRequest{
		Force:     queryBool(r, "force"),
		NoPrune:   queryBool(r, "noprune"),
		Platforms: plats,
	})
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []image.DeleteResponse{}
	}
	return writeJSON(w, http.StatusOK, recs)
}

func (s *Server) imagePrune(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.backend.ImagePrune(r.Context(), r.URL.Query().Get("filters"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}
