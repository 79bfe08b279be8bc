package images

import (
	"context"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/api/types/storage"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// PullRequest is POST /images/create?fromImage=…
type PullRequest struct {
	FromImage, Tag, Platform string
	Auth                     registry.AuthConfig
}

// ImagePull pulls an image, reporting Docker's progress stream.
func (s *Service) ImagePull(ctx context.Context, req PullRequest, progress func(jsonstream.Message)) error {
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	if err := store.PullImage(ctx, req.FromImage, req.Tag, req.Auth, req.Platform, progress); err != nil {
		return err
	}
	ref := req.FromImage
	if strings.Contains(req.Tag, ":") {
		ref += "@" + req.Tag
	} else if req.Tag != "" {
		ref += ":" + req.Tag
	}
	s.imageEvent(eventtypes.ActionPull, ref, ref)
	return nil
}

// ListRequest is GET /images/json.
type ListRequest struct {
	All        bool
	Filters    string // the raw filters JSON
	SharedSize bool
	// Manifests fills each image's Manifests (manifests=1).
	Manifests bool
}

var imageListFilters = map[string]bool{"dangling": true, "label": true, "before": true, "since": true, "reference": true, "until": true}

// ImageList answers GET /images/json, newest first. Containers is the
// number of containers made from the image; SharedSize is -1 unless asked.
func (s *Service) ImageList(ctx context.Context, req ListRequest) ([]image.Summary, error) {
	store, err := s.imageStore()
	if err != nil {
		return nil, err
	}
	f, err := container.ParseFiltersOf(req.Filters, imageListFilters)
	if err != nil {
		return nil, err
	}
	danglingOnly, err := filterBool(f, "dangling", false)
	if err != nil {
		return nil, err
	}
	before, since, err := s.createdBounds(ctx, store, f)
	if err != nil {
		return nil, err
	}
	imgs, err := store.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	users, err := s.imageUsers(ctx)
	if err != nil {
		return nil, err
	}
	children := childrenOf(imgs)
	out := make([]image.Summary, 0, len(imgs))
	for i := range imgs {
		img := &imgs[i]
		if (!before.IsZero() && !img.Created.Before(before)) || (!since.IsZero() && !img.Created.After(since)) {
			continue
		}
		if len(f["label"]) > 0 && (img.Config == nil || !container.MatchLabels(f.Values("label"), img.Config.Config.Labels)) {
			continue
		}
		tags, digests, err := matchingRefs(img.Refs, f)
		if err != nil {
			return nil, err
		}
		digests = withTargetDigests(img.ID, tags, digests)
		if len(tags) == 0 && len(digests) == 0 {
			if !req.All && children[img.ID] {
				continue // an intermediate image
			}
			if (len(f["dangling"]) > 0 && !danglingOnly) || len(f["reference"]) > 0 {
				continue
			}
		} else if danglingOnly && len(tags) > 0 {
			continue
		}
		sum := image.Summary{
			ID:          img.ID,
			Descriptor:  img.Descriptor,
			ParentID:    img.Parent,
			RepoTags:    tags,
			RepoDigests: digests,
			Created:     img.Created.Unix(),
			Size:        img.Size(),
			SharedSize:  -1,
			Containers:  int64(len(users[img.ID])),
		}
		if img.Config != nil {
			sum.Labels = img.Config.Config.Labels
		}
		if req.Manifests {
			sum.Manifests = manifestSummaries(img, users)
		}
		out = append(out, sum)
	}
	if req.SharedSize {
		setSharedSizes(imgs, out)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created > out[j].Created })
	return out, nil
}

// createdBounds resolves the before, since and until filters of a list.
func (s *Service) createdBounds(ctx context.Context, store imagestore.Store, f container.Filters) (before, since time.Time, err error) {
	for _, ref := range sortedValues(f, "before") {
		img, err := store.LookupImage(ctx, ref)
		if err != nil {
			return before, since, err
		}
		if before.IsZero() || img.Created.Before(before) {
			before = img.Created
		}
	}
	for _, v := range sortedValues(f, "until") {
		ts, err := container.ParseTimestamp(v, time.Now())
		if err != nil {
			return before, since, err
		}
		if before.IsZero() || ts.Before(before) {
			before = ts
		}
	}
	for _, ref := range sortedValues(f, "since") {
		img, err := store.LookupImage(ctx, ref)
		if err != nil {
			return before, since, err
		}
		if img.Created.After(since) {
			since = img.Created
		}
	}
	return before, since, nil
}

// matchingRefs splits refs into Docker's familiar RepoTags and RepoDigests,
// keeping only those a "reference" filter matches.
func matchingRefs(refs []string, f container.Filters) (tags, digests []string, err error) {
	for _, r := range refs {
		named, perr := reference.ParseNormalizedNamed(r)
		if perr != nil {
			continue
		}
		if patterns := sortedValues(f, "reference"); len(patterns) > 0 {
			found, merr := matchReference(patterns, named)
			if merr != nil {
				return nil, nil, merr
			}
			if !found {
				continue
			}
		}
		if _, ok := named.(reference.Canonical); ok {
			digests = append(digests, reference.FamiliarString(named))
		} else if _, ok := named.(reference.Tagged); ok {
			tags = append(tags, reference.FamiliarString(named))
		}
	}
	return tags, digests, nil
}

// withTargetDigests adds to digests (familiar) the digest reference
// repo@id of each repository a tag names that no digest reference names:
// in Docker's containerd image store every name points at the image's
// manifest, so each has its repo@digest.
func withTargetDigests(id string, tags, digests []string) []string {
	d, err := digest.Parse(id)
	if err != nil {
		return digests
	}
	named := map[string]bool{}
	for _, r := range digests {
		if n, err := reference.ParseNormalizedNamed(r); err == nil {
			named[n.Name()] = true
		}
	}
	for _, t := range tags {
		n, err := reference.ParseNormalizedNamed(t)
		if err != nil || named[n.Name()] {
			continue
		}
		named[n.Name()] = true
		if c, err := reference.WithDigest(reference.TrimNamed(n), d); err == nil {
			digests = append(digests, reference.FamiliarString(c))
		}
	}
	return digests
}

// matchReference reports whether a "reference" filter's patterns match
// named. As Docker does, a pattern (a path.Match glob) may match the
// familiar or the canonical form, with or without the tag: "busybox",
// "busybox:*", "docker.io/library/busybox" and
// "docker.io/library/busybox:latest" all match busybox:latest.
func matchReference(patterns []string, named reference.Named) (bool, error) {
	targets := []string{
		reference.FamiliarString(named),
		reference.FamiliarName(named),
		reference.TagNameOnly(named).String(),
		named.Name(),
	}
	for _, p := range patterns {
		for _, target := range targets {
			ok, err := path.Match(p, target)
			if err != nil {
				return false, errdefs.ErrInvalidArgument.WithMessage("invalid reference filter " + p + ": " + err.Error())
			}
			if ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// childrenOf returns the IDs of images another image was committed from.
func childrenOf(imgs []imagestore.Image) map[string]bool {
	m := map[string]bool{}
	for _, img := range imgs {
		if img.Parent != "" {
			m[img.Parent] = true
		}
	}
	return m
}

// setSharedSizes fills SharedSize: the size of the layers an image shares
// with any other image.
func setSharedSizes(imgs []imagestore.Image, out []image.Summary) {
	users := map[string]int{}
	for _, img := range imgs {
		for _, l := range img.Layers {
			users[l.ID]++
		}
	}
	byID := map[string]*imagestore.Image{}
	for i := range imgs {
		byID[imgs[i].ID] = &imgs[i]
	}
	for i := range out {
		out[i].SharedSize = 0
		for _, l := range byID[out[i].ID].Layers {
			if users[l.ID] > 1 {
				out[i].SharedSize += l.Size
			}
		}
	}
}

// Detail is the answer of GET /images/{name}/json: the API's, plus
// Parent, which Docker still sends for committed images (deprecated, and
// no longer in the API module's type).
type Detail struct {
	image.InspectResponse
	Parent string `json:"Parent,omitempty"`
	// Container and ContainerConfig are the config's legacy fields, which
	// the API server sends before API 1.45 only.
	Container       string                 `json:"-"`
	ContainerConfig *containertypes.Config `json:"-"`
}

// ImageInspect answers GET /images/{name}/json; platform, when set, is
// the platform the image must be of.
func (s *Service) ImageInspect(ctx context.Context, ref string, platform *ocispec.Platform) (Detail, error) {
	store, err := s.imageStore()
	if err != nil {
		return Detail{}, err
	}
	img, err := lookupPlatform(ctx, store, ref, platform)
	if err != nil {
		return Detail{}, err
	}
	tags, digests, _ := matchingRefs(img.Refs, nil)
	digests = withTargetDigests(img.ID, tags, digests)
	resp := image.InspectResponse{
		ID:          img.ID,
		Descriptor:  img.Descriptor,
		RepoTags:    nonNil(tags),
		RepoDigests: nonNil(digests),
		Comment:     img.Comment,
		Created:     img.Created.UTC().Format(time.RFC3339Nano),
		Size:        img.Size(),
		GraphDriver: &storage.DriverData{Name: store.Driver(), Data: img.DriverData},
		RootFS:      image.RootFS{Type: "layers"},
		Metadata:    image.Metadata{LastTagTime: img.LastTagTime},
	}
	for _, l := range img.Layers {
		resp.RootFS.Layers = append(resp.RootFS.Layers, l.DiffID.String())
	}
	switch {
	case platform != nil && img.Instance != nil:
		// Asked for a platform, Docker describes that platform's manifest.
		d := img.Instance.Descriptor
		resp.ID, resp.Descriptor = d.Digest.String(), &d
	case platform != nil && img.Descriptor != nil:
		d, p := *img.Descriptor, imagePlatform(img)
		d.Platform = &p
		resp.Descriptor = &d
	}
	users, err := s.imageUsers(ctx)
	if err != nil {
		return Detail{}, err
	}
	resp.Manifests = manifestSummaries(img, users)
	if cfg := img.Config; cfg != nil {
		resp.Author = cfg.Author
		resp.Architecture, resp.Variant = cfg.Architecture, cfg.Variant
		resp.Os, resp.OsVersion = cfg.OS, cfg.OSVersion
		c := cfg.Config
		resp.Config = &c
		if len(cfg.RootFS.DiffIDs) > 0 {
			// The config's list is authoritative, empty layers included.
			resp.RootFS.Layers = resp.RootFS.Layers[:0]
			for _, d := range cfg.RootFS.DiffIDs {
				resp.RootFS.Layers = append(resp.RootFS.Layers, d.String())
			}
		}
	}
	return Detail{InspectResponse: resp, Parent: img.Parent, Container: img.Container, ContainerConfig: img.ContainerConfig}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ImageHistory answers GET /images/{name}/history: the config's history,
// newest first, with the size of each entry's layer. As in Docker, only
// the newest entry carries the image's ID and tags; the others are
// "<missing>" unless they are the image's parent. platform, when set, is
// the platform the image must be of.
func (s *Service) ImageHistory(ctx context.Context, ref string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	store, err := s.imageStore()
	if err != nil {
		return nil, err
	}
	img, err := lookupPlatform(ctx, store, ref, platform)
	if err != nil {
		return nil, err
	}
	var out []image.HistoryResponseItem
	if img.Config != nil {
		layer := 0
		for _, h := range img.Config.History {
			item := image.HistoryResponseItem{ID: "<missing>", CreatedBy: h.CreatedBy, Comment: h.Comment}
			if h.Created != nil {
				item.Created = h.Created.Unix()
			}
			if !h.EmptyLayer {
				if layer < len(img.Layers) {
					item.Size = img.Layers[layer].Size
				}
				layer++
			}
			out = append(out, item)
		}
	}
	slices.Reverse(out)
	if len(out) == 0 {
		// No history recorded: one entry for the image itself.
		out = append(out, image.HistoryResponseItem{ID: "<missing>", Created: img.Created.Unix(), Size: img.Size()})
	}
	for i, cur := 0, img; i < len(out) && cur != nil; i++ {
		out[i].ID = cur.ID
		out[i].Tags, _, _ = matchingRefs(cur.Refs, nil)
		if cur.Parent == "" {
			break
		}
		if cur, err = store.LookupImage(ctx, cur.Parent); err != nil {
			break
		}
	}
	return out, nil
}

// ImageTag answers POST /images/{name}/tag?repo=&tag=.
func (s *Service) ImageTag(ctx context.Context, ref, repo, tag string) error {
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	named, err := RepoTagReference(repo, tag)
	if err != nil {
		return err
	}
	if named == nil {
		return errdefs.ErrInvalidArgument.WithMessage("repository name (repo) is required")
	}
	if reference.FamiliarName(named) == string(digest.Canonical) {
		return errdefs.ErrInvalidArgument.WithMessage("refusing to create an ambiguous tag using digest algorithm as name")
	}
	img, err := store.LookupImage(ctx, ref)
	if err != nil {
		return err
	}
	if err := store.TagImage(ctx, img.ID, named.String()); err != nil {
		return err
	}
	s.imageEvent(eventtypes.ActionTag, img.ID, reference.FamiliarString(named))
	return nil
}

// RepoTagReference combines the repo and tag parameters of tag and import
// as Docker does: no repo is no reference, no tag is "latest", a digest is
// refused.
func RepoTagReference(repo, tag string) (reference.NamedTagged, error) {
	if repo == "" {
		return nil, nil
	}
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, InvalidReference(err)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, errdefs.ErrInvalidArgument.WithMessage("cannot import digest reference")
	}
	if tag != "" {
		nt, err := reference.WithTag(named, tag)
		if err != nil {
			return nil, InvalidReference(err)
		}
		return nt, nil
	}
	nt, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return nil, errdefs.ErrInvalidArgument.WithMessage("invalid reference: " + repo)
	}
	return nt, nil
}

// InvalidReference classes a reference parse error, keeping the library's
// message ("invalid reference format…") as Docker does.
func InvalidReference(err error) error {
	return errdefs.ErrInvalidArgument.WithMessage(err.Error())
}

// manifestSummaries are the image's manifests as inspect's manifests=1
// lists them: each platform of a multi-platform image, or its one
// manifest.
func manifestSummaries(img *imagestore.Image, users map[string][]*container.Container) []image.ManifestSummary {
	var names []string
	for _, c := range users[img.ID] {
		names = append(names, c.ID)
	}
	summary := func(d ocispec.Descriptor, available bool, size int64, cfg *dockerspec.DockerOCIImage) image.ManifestSummary {
		m := image.ManifestSummary{ID: d.Digest.String(), Descriptor: d, Available: available, Kind: image.ManifestKindImage}
		m.Size.Content, m.Size.Total = size, size
		props := &image.ImageProperties{Containers: nonNil(names)}
		if d.Platform != nil {
			props.Platform = *d.Platform
		} else if cfg != nil {
			props.Platform = ocispec.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		}
		props.Size.Unpacked = size
		m.ImageData = props
		return m
	}
	if img.Platforms == nil {
		if img.Descriptor == nil {
			return nil
		}
		return []image.ManifestSummary{summary(*img.Descriptor, true, img.Size(), img.Config)}
	}
	out := make([]image.ManifestSummary, 0, len(img.Platforms))
	for _, p := range img.Platforms {
		out = append(out, summary(p.Descriptor, p.Available, p.Size, p.Config))
	}
	return out
}
