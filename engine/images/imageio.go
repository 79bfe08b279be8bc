package images

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	eventtypes "github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/build/buildctx"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// ImportRequest is POST /images/create?fromSrc=… (docker import).
type ImportRequest struct {
	// Source is "-" for the request body, or a URL to fetch the rootfs from.
	Source    string
	Repo, Tag string
	Message   string
	// Changes are Dockerfile instructions applied to the config.
	Changes  []string
	Platform string
}

// ImageImport answers docker import: the rootfs tar (body, or fetched from
// req.Source) becomes a one-layer image, and progress receives Docker's
// final {"status":"sha256:…"}. Bad parameters are errdefs.ErrInvalidArgument
// before anything is read.
func (s *Service) ImageImport(ctx context.Context, req ImportRequest, body io.Reader, progress func(jsonstream.Message)) error {
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	named, err := RepoTagReference(req.Repo, req.Tag)
	if err != nil {
		return err
	}
	platform, err := importPlatform(req.Platform)
	if err != nil {
		return err
	}
	var cfg dockerspec.DockerOCIImageConfig
	if err := ApplyChanges(&cfg, req.Changes); err != nil {
		return err
	}
	msg := req.Message
	if msg == "" {
		msg = "Imported from " + req.Source
	}
	src := body
	if req.Source != "-" {
		rc, err := fetchRootfs(ctx, req.Source, progress)
		if err != nil {
			return err
		}
		defer rc.Close()
		src = rc
	}
	created := time.Now().UTC()
	ic := imagestore.ImportConfig{Comment: msg, Image: dockerspec.DockerOCIImage{
		Image: ocispec.Image{
			Created:  &created,
			Platform: platform,
			History:  []ocispec.History{{Created: &created, Comment: msg}},
		},
		Config: cfg,
	}}
	name := ""
	if named != nil {
		name = named.String()
	}
	id, err := store.ImportImage(ctx, src, ic, name)
	if err != nil {
		return err
	}
	progress(jsonstream.Message{Status: id})
	s.imageEvent(eventtypes.ActionImport, id, id)
	return nil
}

// importPlatform parses "os[/arch[/variant]]"; "" is this machine. Only
// Linux images can be made here.
func importPlatform(p string) (ocispec.Platform, error) {
	out := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if p == "" {
		return out, nil
	}
	parts := strings.Split(strings.ToLower(p), "/")
	if len(parts) > 3 || parts[0] == "" {
		return out, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid platform %q: want os[/arch[/variant]]", p))
	}
	if parts[0] != "linux" {
		return out, errdefs.ErrInvalidArgument.WithMessage("operating system is not supported")
	}
	if len(parts) > 1 && parts[1] != "" {
		out.Architecture = parts[1]
	}
	if len(parts) > 2 {
		out.Variant = parts[2]
	}
	return out, nil
}

// fetchRootfs downloads the rootfs of docker import URL, as Docker does:
// a source without a scheme is an http:// address.
func fetchRootfs(ctx context.Context, src string, progress func(jsonstream.Message)) (io.ReadCloser, error) {
	if !strings.Contains(src, "://") {
		src = "http://" + src
	}
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid import source %q: want - or an http(s) URL", src))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage(err.Error())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", u.Redacted(), err)
	}
	if resp.StatusCode >= 400 {
		class, detail := buildctx.StatusError(u.Redacted(), resp)
		return nil, class(detail)
	}
	progress(jsonstream.Message{Status: "Downloading from " + u.Redacted()})
	return resp.Body, nil
}

// LoadRequest is a docker load: quiet (no progress), of one platform's
// images only, or of a build's result (Built: an image create event
// rather than a load, and a tag event per name).
type LoadRequest struct {
	Quiet     bool
	Platforms []ocispec.Platform
	Built     bool
}

// ImageLoad answers docker load: the images of the archive, with Docker's
// "Loaded image: …" lines (and its note when a tag moved off another
// image). Images loaded before a failure are reported before the error.
// With a platform, only the archive's images of that platform are loaded,
// and an archive with none is an error.
func (s *Service) ImageLoad(ctx context.Context, archive io.Reader, req LoadRequest, progress func(jsonstream.Message)) error {
	quiet, plats := req.Quiet, req.Platforms
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	var opts imagestore.LoadOptions
	if len(plats) > 0 {
		opts.Match = func(p ocispec.Platform) bool {
			return slices.ContainsFunc(plats, func(want ocispec.Platform) bool { return platformMatches(want, p) })
		}
	}
	if !quiet {
		opts.Progress = progress
	}
	loaded, err := store.LoadImages(ctx, archive, opts)
	if err == nil && len(loaded) == 0 && len(plats) > 0 {
		err = errdefs.ErrNotFound.WithMessage(fmt.Sprintf("no images providing the requested platform(s) found: [%s]", formatPlatforms(plats)))
	}
	for _, li := range loaded {
		action := eventtypes.ActionLoad
		if req.Built {
			action = eventtypes.ActionCreate
		}
		s.imageEvent(action, li.ID, li.ID)
		for _, n := range li.Names {
			fam := familiar(n)
			if req.Built {
				s.imageEvent(eventtypes.ActionTag, li.ID, fam)
			}
			if old, ok := li.Replaced[n]; ok {
				progress(jsonstream.Message{Stream: fmt.Sprintf("The image %s already exists, renaming the old one with ID %s to empty string\n", fam, old)})
			}
			progress(jsonstream.Message{Stream: "Loaded image: " + fam + "\n"})
			unpackError(progress, fam, li.Unpack)
		}
		if len(li.Names) == 0 {
			progress(jsonstream.Message{Stream: "Loaded image ID: " + li.ID + "\n"})
			unpackError(progress, li.ID, li.Unpack)
		}
	}
	return err
}

// unpackError tells, as Docker does after its "Loaded image" line, that
// a loaded image's platforms did not unpack.
func unpackError(progress func(jsonstream.Message), name string, err error) {
	if err != nil {
		progress(jsonstream.Message{Stream: fmt.Sprintf("Error unpacking image %s: %v\n", name, err)})
	}
}

func familiar(name string) string {
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		return reference.FamiliarString(named)
	}
	return name
}

// ImageSave answers docker save of names (a repository saves all its
// tags, a tag or digest reference or ID that image). Every name is resolved
// before the first byte is written, so an unknown name is an error the
// client sees as such. With platforms, an image of one platform must be
// of one of them, and a multi-platform image is saved with those of them
// it has.
func (s *Service) ImageSave(ctx context.Context, names []string, plats []ocispec.Platform, w io.Writer) error {
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errdefs.ErrInvalidArgument.WithMessage("no image name given")
	}
	var items []imagestore.SaveImage
	add := func(id, name string) {
		i := slices.IndexFunc(items, func(s imagestore.SaveImage) bool { return s.ID == id })
		if i < 0 {
			items = append(items, imagestore.SaveImage{ID: id})
			i = len(items) - 1
		}
		if name != "" && !slices.Contains(items[i].Names, name) {
			items[i].Names = append(items[i].Names, name)
		}
	}
	var all []imagestore.Image
	byID := map[string]*imagestore.Image{}
	for _, name := range names {
		named, perr := reference.ParseNormalizedNamed(name)
		if perr == nil && reference.IsNameOnly(named) && reference.FamiliarName(named) != "sha256" {
			// A repository: every tag of it.
			if all == nil {
				if all, err = store.ListImages(ctx); err != nil {
					return err
				}
			}
			found := false
			for _, img := range all {
				for _, r := range parseRefs(img.Refs) {
					if _, tagged := r.(reference.NamedTagged); tagged && r.Name() == named.Name() {
						add(img.ID, r.String())
						byID[img.ID] = &img
						found = true
					}
				}
			}
			if found {
				continue
			}
		}
		img, err := store.LookupImage(ctx, name)
		if err != nil {
			return err
		}
		tag := ""
		if nt, ok := named.(reference.NamedTagged); perr == nil && ok && !isImageIDPrefix(img.ID, name) {
			tag = nt.String()
		}
		add(img.ID, tag)
		byID[img.ID] = img
	}
	if len(plats) > 0 {
		for i, it := range items {
			if !hasPlatform(byID[it.ID], plats) {
				return errdefs.ErrNotFound.WithMessage("no suitable export target found for platform " + formatPlatforms(plats))
			}
			items[i].Platforms = plats
		}
	}
	if err := store.SaveImages(ctx, items, w); err != nil {
		return err
	}
	for _, it := range items {
		name := it.ID
		if len(it.Names) > 0 {
			name = it.Names[0]
		}
		s.imageEvent(eventtypes.ActionSave, it.ID, name)
	}
	return nil
}

// RegistryLogin answers POST /auth (docker login).
func (s *Service) RegistryLogin(ctx context.Context, auth registry.AuthConfig) (registry.AuthResponse, error) {
	store, err := s.imageStore()
	if err != nil {
		return registry.AuthResponse{}, err
	}
	if err := store.RegistryLogin(ctx, auth); err != nil {
		return registry.AuthResponse{}, err
	}
	return registry.AuthResponse{Status: "Login Succeeded"}, nil
}

// DistributionInspect answers GET /distribution/{name}/json: the
// descriptor and platforms of name's manifest, asked of its registry.
func (s *Service) DistributionInspect(ctx context.Context, name string, auth registry.AuthConfig) (registry.DistributionInspect, error) {
	store, err := s.imageStore()
	if err != nil {
		return registry.DistributionInspect{}, err
	}
	return store.InspectDistribution(ctx, name, auth)
}
