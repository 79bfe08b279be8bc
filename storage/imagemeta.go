package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
)

// metaKey names the image big-data item where hutch keeps what Docker
// keeps beside an image and containers/storage has no field for.
const metaKey = "hutch-meta"

// imageMeta is the content of the metaKey item.
type imageMeta struct {
	// RepoDigests maps a repository ("docker.io/library/busybox") to the
	// digests pulls of it resolved to: Docker's digest references. They
	// live apart from the image's names, as in Docker's reference store,
	// so that tagging or importing an image adds no digest reference and
	// a tag moving to a newer image leaves the old one its digest.
	RepoDigests map[string][]digest.Digest `json:"repoDigests,omitempty"`
	// LastTagTime is when TagImage last gave the image a name.
	LastTagTime time.Time `json:"lastTagTime,omitzero"`
	// Parent is the ID ("sha256:…") of the image a commit made this one
	// from: Docker's ParentId.
	Parent string `json:"parent,omitempty"`
}

// meta reads the image's metadata; a missing or damaged item is empty.
func (s *Store) meta(img *cstorage.Image) imageMeta {
	var m imageMeta
	if !slices.Contains(img.BigDataNames, metaKey) {
		return m
	}
	b, err := s.cs.ImageBigData(img.ID, metaKey)
	if err != nil {
		return m
	}
	if err := json.Unmarshal(b, &m); err != nil {
		s.log.Warn("storage: damaged image metadata ignored", "image", img.ID, "err", err)
		return imageMeta{}
	}
	return m
}

// updateMeta changes the metadata of image id under s.metaMu (the
// read-modify-write must not interleave with another one); change reports
// whether it changed anything.
func (s *Store) updateMeta(id string, change func(*imageMeta) bool) error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	img, err := s.cs.Image(id)
	if err != nil {
		return fmt.Errorf("storage: image %s: %w", id, classify(err))
	}
	m := s.meta(img)
	if !change(&m) {
		return nil
	}
	b, err := json.Marshal(&m)
	if err != nil {
		return err
	}
	if err := s.cs.SetImageBigData(img.ID, metaKey, b, nil); err != nil {
		return fmt.Errorf("storage: writing metadata of image %s: %w", id, classify(err))
	}
	return nil
}

// recordPull records repo@d as a digest reference of image id.
func (s *Store) recordPull(id, repo string, d digest.Digest) error {
	return s.updateMeta(id, func(m *imageMeta) bool {
		if slices.Contains(m.RepoDigests[repo], d) {
			return false
		}
		if m.RepoDigests == nil {
			m.RepoDigests = map[string][]digest.Digest{}
		}
		m.RepoDigests[repo] = append(m.RepoDigests[repo], d)
		return true
	})
}

// SetImageParent records parent ("sha256:…") as the image Docker's
// ParentId names: the image a commit made image id from.
func (s *Store) SetImageParent(ctx context.Context, id, parent string) error {
	img, err := s.byID(id)
	if err != nil {
		return err
	}
	return s.updateMeta(img.ID, func(m *imageMeta) bool {
		if m.Parent == parent {
			return false
		}
		m.Parent = parent
		return true
	})
}
