package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
)

// Image is an image of the store as the Docker API shows it.
type Image struct {
	ID          string        // "sha256:" + config digest hex
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
		if img, err := s.cs.Image(hexID); err == nil && img.ID == hexID {
			return img, nil
		}
		return nil, notFound
	}
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		if c, ok := named.(reference.Canonical); ok {
			if img := s.byDigest(named.Name(), c.Digest()); img != nil {
				return img, nil
			}
		} else if img, err := s.cs.Image(reference.TagNameOnly(named).String()); err == nil && slices.Contains(img.Names, reference.TagNameOnly(named).String()) {
			return img, nil
		}
	}
	if isHex(hexID) && hexID != "" {
		if img, err := s.cs.Image(hexID); err == nil && strings.HasPrefix(img.ID, hexID) {
			return img, nil
		}
	}
	return nil, notFound
}

// byDigest finds the image of repository repo whose manifest (or manifest
// list) has digest d.
func (s *Store) byDigest(repo string, d digest.Digest) *cstorage.Image {
	imgs, err := s.cs.Images()
	if err != nil {
		return nil
	}
	for i := range imgs {
		img := &imgs[i]
		if !slices.Contains(img.Digests, d) && img.Digest != d {
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

// RemoveImage deletes the image (all its names) and the layers no other
// image uses, returning the IDs of the deleted layers. It returns
// errdefs.ErrNotFound for an unknown image and errdefs.ErrConflict when a
// container uses it.
func (s *Store) RemoveImage(ctx context.Context, ref string) ([]string, error) {
	img, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	layers, err := s.cs.DeleteImage(img.ID, true)
	switch {
	case errors.Is(err, cstorage.ErrImageUsedByContainer):
		return nil, fmt.Errorf("image %s is used by a container: %w", img.ID, errdefs.ErrConflict)
	case errors.Is(err, cstorage.ErrImageUnknown):
		return nil, noSuchImage(ref)
	case err != nil:
		return nil, fmt.Errorf("storage: deleting image %s: %w", img.ID, err)
	}
	return layers, nil
}

// toImage converts a library image record.
func (s *Store) toImage(img *cstorage.Image) *Image {
	// The "manifest" item is the image's own manifest; other manifest
	// digests are lists it was pulled through, which Docker records.
	own := img.BigDataDigests[cstorage.ImageDigestBigDataKey]
	if own == "" {
		own = img.Digest
	}
	out := &Image{
		ID:       "sha256:" + img.ID,
		Names:    append([]string(nil), img.Names...),
		TopLayer: img.TopLayer,
		Digest:   own,
		Created:  img.Created,
	}
	digests := img.Digests
	if len(digests) > 1 {
		digests = slices.DeleteFunc(slices.Clone(digests), func(d digest.Digest) bool { return d == own })
	}
	if len(digests) == 0 && own != "" {
		digests = []digest.Digest{own}
	}
	seen := map[string]bool{}
	addDigest := func(s string) {
		if !seen[s] {
			seen[s] = true
			out.RepoDigests = append(out.RepoDigests, s)
		}
	}
	for _, n := range img.Names {
		named, err := reference.ParseNormalizedNamed(n)
		if err != nil {
			continue
		}
		if c, ok := named.(reference.Canonical); ok {
			addDigest(reference.FamiliarString(c))
		} else if _, ok := named.(reference.Tagged); ok {
			out.RepoTags = append(out.RepoTags, reference.FamiliarString(named))
		}
		for _, d := range digests {
			if c, err := reference.WithDigest(reference.TrimNamed(named), d); err == nil {
				addDigest(reference.FamiliarString(c))
			}
		}
	}
	return out
}
