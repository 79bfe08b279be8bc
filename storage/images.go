package storage

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
)

// Image is an image of the store as the Docker API shows it.
type Image struct {
	ID          string        // "sha256:" + manifest digest hex (imageID)
	RepoTags    []string      // familiar names: "busybox:latest", "localhost:5000/x:1"
	RepoDigests []string      // familiar: "busybox@sha256:..."
	Names       []string      // names as stored: "docker.io/library/busybox:latest"
	TopLayer    string        // storage layer ID of the top layer ("" for no layers)
	Digest      digest.Digest // digest of the image's own manifest
	Created     time.Time     // from the config when known, else when stored
}

// Images lists every image of the store.
func (s *Store) Images() ([]Image, error) {
	imgs, err := s.cs.Images()
	if err != nil {
		return nil, fmt.Errorf("storage: listing images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for i := range imgs {
		out = append(out, *s.toImage(&imgs[i]))
	}
	return out, nil
}

// Image finds an image as Docker does: a full ID ("sha256:<hex>" or hex), a
// name ("busybox" is docker.io/library/busybox:latest), a digest reference
// ("busybox@sha256:..."), or an unambiguous ID prefix. It returns
// errdefs.ErrNotFound with Docker's "No such image: ..." message.
func (s *Store) Image(ref string) (*Image, error) {
	img, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	return s.toImage(img), nil
}

func (s *Store) lookup(ref string) (*cstorage.Image, error) {
	notFound := noSuchImage(ref)
	hexID := strings.TrimPrefix(ref, "sha256:")
	if isHex(hexID) && len(hexID) == 64 {
		if img := s.byFullID(hexID); img != nil {
			return img, nil
		}
		return nil, notFound
	}
	named, perr := reference.ParseNormalizedNamed(ref)
	if perr == nil {
		if c, ok := named.(reference.Canonical); ok {
			if img := s.byDigest(named.Name(), c.Digest()); img != nil {
				return img, nil
			}
		} else if img, err := s.cs.Image(reference.TagNameOnly(named).String()); err == nil && slices.Contains(img.Names, reference.TagNameOnly(named).String()) {
			return img, nil
		}
	}
	if isHex(hexID) && hexID != "" {
		if img := s.byIDPrefix(hexID); img != nil {
			return img, nil
		}
	}
	if perr != nil {
		// Neither a name nor an ID: Docker answers 400, not 404.
		return nil, invalidReference(perr)
	}
	return nil, notFound
}

// byID finds the image of a full ID ("sha256:<hex>" or hex): the one whose
// manifest has that digest (idOf), else the one the store keeps under it
// (its config's digest, which containers made before IDs were manifest
// digests still name). It returns Docker's "No such image" otherwise.
func (s *Store) byID(id string) (*cstorage.Image, error) {
	if img := s.byFullID(hexOf(id)); img != nil {
		return img, nil
	}
	return nil, noSuchImage(id)
}

func (s *Store) byFullID(hexID string) *cstorage.Image {
	if len(hexID) != 64 || !isHex(hexID) {
		return nil
	}
	if v, ok := s.ids.Load(hexID); ok {
		if img, err := s.cs.Image(v.(string)); err == nil && hexOf(s.idOf(img)) == hexID {
			return img
		}
	}
	imgs, err := s.cs.Images()
	if err != nil {
		return nil
	}
	for i := range imgs {
		if hexOf(s.idOf(&imgs[i])) == hexID {
			s.ids.Store(hexID, imgs[i].ID)
			return &imgs[i]
		}
	}
	if img, err := s.cs.Image(hexID); err == nil && img.ID == hexID {
		return img
	}
	return nil
}

// byIDPrefix finds the one image whose ID starts with prefix (hex); none
// when several do. The store's own IDs are tried last.
func (s *Store) byIDPrefix(prefix string) *cstorage.Image {
	imgs, err := s.cs.Images()
	if err != nil {
		return nil
	}
	var found *cstorage.Image
	for i := range imgs {
		if strings.HasPrefix(hexOf(s.idOf(&imgs[i])), prefix) {
			if found != nil {
				return nil
			}
			found = &imgs[i]
		}
	}
	if found != nil {
		return found
	}
	if img, err := s.cs.Image(prefix); err == nil && strings.HasPrefix(img.ID, prefix) {
		return img
	}
	return nil
}

// byDigest finds the image of repository repo whose ID or pulled manifest
// (or manifest list) has digest d, or that a pull recorded as repo@d.
func (s *Store) byDigest(repo string, d digest.Digest) *cstorage.Image {
	imgs, err := s.cs.Images()
	if err != nil {
		return nil
	}
	for i := range imgs {
		img := &imgs[i]
		if slices.Contains(s.meta(img).RepoDigests[repo], d) {
			return img
		}
		if !slices.Contains(img.Digests, d) && img.Digest != d && s.idOf(img) != d.String() {
			continue
		}
		for _, n := range img.Names {
			if named, err := reference.ParseNormalizedNamed(n); err == nil && named.Name() == repo {
				return img
			}
		}
	}
	return nil
}

// hexOf strips the "sha256:" of an image ID.
func hexOf(id string) string { return strings.TrimPrefix(id, "sha256:") }

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ImageConfigBlob returns the image's config exactly as pulled (Docker or
// OCI JSON).
func (s *Store) ImageConfigBlob(ref string) ([]byte, error) {
	img, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	if img, err = s.platformImage(img, nil); err != nil {
		return nil, err
	}
	return s.configBlob(img)
}

// configBlob returns img's config as stored.
func (s *Store) configBlob(img *cstorage.Image) ([]byte, error) {
	b, err := s.cs.ImageBigData(img.ID, "sha256:"+img.ID)
	if err != nil {
		return nil, fmt.Errorf("storage: config of image %s: %w", img.ID, err)
	}
	return b, nil
}

// ImageConfig returns the parsed config (Docker's superset of the OCI one,
// with Healthcheck, OnBuild, Shell).
func (s *Store) ImageConfig(ref string) (*dockerspec.DockerOCIImage, error) {
	b, err := s.ImageConfigBlob(ref)
	if err != nil {
		return nil, err
	}
	var cfg dockerspec.DockerOCIImage
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("storage: parsing image config: %w", err)
	}
	return &cfg, nil
}

// toImage converts a library image record.
func (s *Store) toImage(img *cstorage.Image) *Image {
	out := &Image{
		ID:       s.idOf(img),
		Names:    append([]string(nil), img.Names...),
		TopLayer: img.TopLayer,
		Digest:   ownDigest(img),
		Created:  img.Created,
	}
	tags, digests := s.refs(img)
	for _, r := range tags {
		out.RepoTags = append(out.RepoTags, reference.FamiliarString(r))
	}
	for _, r := range digests {
		out.RepoDigests = append(out.RepoDigests, reference.FamiliarString(r))
	}
	return out
}

// ownDigest is the digest of the image's own manifest: the "manifest" item;
// other manifest digests are lists it was pulled through.
func ownDigest(img *cstorage.Image) digest.Digest {
	if d := img.BigDataDigests[cstorage.ImageDigestBigDataKey]; d != "" {
		return d
	}
	return img.Digest
}

// refs returns the image's references as Docker keeps them: its tags (the
// tagged names), and its digest references (names stored with a digest,
// and the repo@digest pairs pulls recorded). Tags come first, each list in
// lexical order.
func (s *Store) refs(img *cstorage.Image) (tags, digests []reference.Named) {
	seen := map[string]bool{}
	addDigest := func(c reference.Named) {
		if !seen[c.String()] {
			seen[c.String()] = true
			digests = append(digests, c)
		}
	}
	for _, n := range img.Names {
		named, err := reference.ParseNormalizedNamed(n)
		if err != nil {
			continue
		}
		if _, ok := named.(reference.Canonical); ok {
			addDigest(named)
		} else if _, ok := named.(reference.Tagged); ok {
			tags = append(tags, named)
		}
	}
	m := s.meta(img)
	repos := make([]string, 0, len(m.RepoDigests))
	for repo := range m.RepoDigests {
		repos = append(repos, repo)
	}
	slices.Sort(repos)
	for _, repo := range repos {
		named, err := reference.ParseNormalizedNamed(repo)
		if err != nil {
			continue
		}
		for _, d := range m.RepoDigests[repo] {
			if c, err := reference.WithDigest(reference.TrimNamed(named), d); err == nil {
				addDigest(c)
			}
		}
	}
	// Docker's reference store lists references in lexical order.
	byString := func(a, b reference.Named) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(tags, byString)
	slices.SortFunc(digests, byString)
	return tags, digests
}
