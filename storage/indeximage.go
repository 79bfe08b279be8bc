package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	cstorage "go.podman.io/storage"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// Several platforms under one name, as Docker's containerd image store
// keeps them: a pull or load of an image index (or Docker manifest list)
// stores an index image, a record without layers whose ID is the index's
// digest, holding the index as it came (indexKey) and the image's names.
// Each platform whose content was pulled or loaded is an ordinary image
// of the store (an instance), found by the digest of the index's entry,
// which containers/storage records for it; the others are named by the
// index but not available. An instance the index holds and nothing else
// names is not listed on its own.

// indexKey names the big-data item of an index image: the index.
const indexKey = "hutch-index"

// attestationType is the annotation BuildKit gives the manifests of an
// index that hold attestations rather than a platform's image.
const attestationType = "vnd.docker.reference.type"

func isIndex(img *cstorage.Image) bool {
	_, ok := img.BigDataDigests[indexKey]
	return ok
}

// instance is one entry of an index image.
type instance struct {
	desc ocispec.Descriptor // the index's entry, with its platform
	img  *cstorage.Image    // the stored image; nil when not available
}

// index reads index image img's index.
func (s *Store) index(img *cstorage.Image) (ocispec.Index, []byte, error) {
	var idx ocispec.Index
	b, err := s.cs.ImageBigData(img.ID, indexKey)
	if err != nil {
		return idx, nil, fmt.Errorf("storage: index of image %s: %w", img.ID, classify(err))
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return idx, nil, fmt.Errorf("storage: parsing the index of image %s: %w", img.ID, err)
	}
	return idx, b, nil
}

// instances lists index image img's platforms (attestations left out),
// each with its stored image when available.
func (s *Store) instances(img *cstorage.Image) ([]instance, error) {
	idx, _, err := s.index(img)
	if err != nil {
		return nil, err
	}
	var out []instance
	for _, m := range idx.Manifests {
		if m.Annotations[attestationType] != "" {
			continue
		}
		inst := instance{desc: m}
		if inst.desc.Platform == nil {
			inst.desc.Platform = &ocispec.Platform{}
		}
		inst.img = s.instanceImage(m.Digest)
		out = append(out, inst)
	}
	return out, nil
}

// instanceImage is the stored image whose manifest has digest d.
func (s *Store) instanceImage(d digest.Digest) *cstorage.Image {
	imgs, err := s.cs.ImagesByDigest(d)
	if err != nil {
		return nil
	}
	for _, img := range imgs {
		if !isIndex(img) {
			return img
		}
	}
	return nil
}

// pick chooses the available instance for want: the platform want
// matches (containerd's strict matching), or with want nil the host's,
// else the first available one, as Docker falls back to what is there.
// It returns nil when none fits.
func pick(insts []instance, want *ocispec.Platform) *instance {
	var match platforms.MatchComparer
	if want != nil {
		match = platforms.OnlyStrict(*want)
	} else {
		match = platforms.Default()
	}
	var best *instance
	for i := range insts {
		in := &insts[i]
		if in.img == nil || !match.Match(*in.desc.Platform) {
			continue
		}
		if best == nil || match.Less(*in.desc.Platform, *best.desc.Platform) {
			best = in
		}
	}
	if best != nil || want != nil {
		return best
	}
	for i := range insts {
		if insts[i].img != nil {
			return &insts[i]
		}
	}
	return nil
}

// platformImage resolves img to the image that has content: itself, or
// for an index image the instance for want (see pick). An index without
// one is errdefs.ErrNotFound.
func (s *Store) platformImage(img *cstorage.Image, want *ocispec.Platform) (*cstorage.Image, error) {
	if !isIndex(img) {
		return img, nil
	}
	insts, err := s.instances(img)
	if err != nil {
		return nil, err
	}
	if in := pick(insts, want); in != nil {
		return in.img, nil
	}
	what := "the host's platform"
	if want != nil {
		what = platforms.FormatAll(*want)
	}
	return nil, fmt.Errorf("image %s has no content for %s%.0w", "sha256:"+img.ID, what, errdefs.ErrNotFound)
}

// indexRecord describes index image img as the image service sees it:
// its ID, names and descriptor, with the config and layers of the
// instance for want (nil: the host's; see pick), and every platform.
func (s *Store) indexRecord(img *cstorage.Image, layers map[string]*cstorage.Layer, want *ocispec.Platform) (*imagestore.Image, error) {
	insts, err := s.instances(img)
	if err != nil {
		return nil, err
	}
	out := &imagestore.Image{Created: img.Created}
	chosen := pick(insts, want)
	if chosen != nil {
		out = s.record(chosen.img, layers)
	} else if want != nil {
		return nil, &imagestore.PlatformError{Platform: *want}
	}
	out.ID = "sha256:" + img.ID
	out.Descriptor = &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.Digest(out.ID), Size: img.BigDataSizes[indexKey]}
	if mt := s.indexMediaType(img); mt != "" {
		out.Descriptor.MediaType = mt
	}
	out.Refs = nil
	tags, digests := s.refs(img)
	for _, r := range append(tags, digests...) {
		out.Refs = append(out.Refs, r.String())
	}
	m := s.meta(img)
	out.Parent, out.LastTagTime = m.Parent, m.LastTagTime
	for _, in := range insts {
		p := imagestore.PlatformImage{Descriptor: in.desc, Available: in.img != nil}
		if in.img != nil {
			r := s.record(in.img, layers)
			p.ID, p.Size, p.Config = r.ID, r.Size(), r.Config
		}
		out.Platforms = append(out.Platforms, p)
		if chosen != nil && in.img == chosen.img {
			out.Instance = &out.Platforms[len(out.Platforms)-1]
		}
	}
	if out.Instance != nil {
		// Platforms may have grown since: point into its final array.
		for i := range out.Platforms {
			if out.Platforms[i].Descriptor.Digest == chosen.desc.Digest {
				out.Instance = &out.Platforms[i]
			}
		}
	}
	return out, nil
}

// indexMediaType is the media type index image img's index declares.
func (s *Store) indexMediaType(img *cstorage.Image) string {
	idx, _, err := s.index(img)
	if err != nil {
		return ""
	}
	return idx.MediaType
}

// indexHeld returns the IDs of the images index images hold as instances.
func (s *Store) indexHeld(imgs []cstorage.Image) map[string]bool {
	held := map[string]bool{}
	for i := range imgs {
		if !isIndex(&imgs[i]) {
			continue
		}
		insts, err := s.instances(&imgs[i])
		if err != nil {
			continue
		}
		for _, in := range insts {
			if in.img != nil {
				held[in.img.ID] = true
			}
		}
	}
	return held
}

// deleteIndex deletes index image img and the instances nothing else
// holds or names; it returns the layers deleted.
func (s *Store) deleteIndex(img *cstorage.Image) ([]string, error) {
	insts, err := s.instances(img)
	if err != nil {
		return nil, err
	}
	if _, err := s.cs.DeleteImage(img.ID, true); err != nil {
		return nil, fmt.Errorf("storage: deleting image %s: %w", img.ID, classify(err))
	}
	all, err := s.cs.Images()
	if err != nil {
		return nil, err
	}
	held := s.indexHeld(all)
	var layers []string
	for _, in := range insts {
		if in.img == nil || held[in.img.ID] || len(in.img.Names) > 0 {
			continue
		}
		ls, err := s.cs.DeleteImage(in.img.ID, true)
		if errors.Is(err, cstorage.ErrImageUsedByContainer) {
			continue // a container's rootfs keeps it
		}
		if err != nil {
			return layers, fmt.Errorf("storage: deleting image %s: %w", in.img.ID, classify(err))
		}
		layers = append(layers, ls...)
	}
	s.removeInitLayers(layers)
	return layers, nil
}

// contentImage finds the image of ID id and resolves it to the image with
// its content: for a multi-platform image, the host's platform's.
func (s *Store) contentImage(id string) (*cstorage.Image, error) {
	img, err := s.byID(id)
	if err != nil {
		return nil, err
	}
	return s.platformImage(img, nil)
}

// DeletePlatforms deletes the content of multi-platform image id's
// platforms want, which its index goes on naming, and returns the index
// entries whose content went. An image of one manifest is
// errdefs.ErrInvalidArgument: it has no platforms to delete apart.
func (s *Store) DeletePlatforms(ctx context.Context, id string, want []ocispec.Platform) ([]ocispec.Descriptor, error) {
	img, err := s.byID(id)
	if err != nil {
		return nil, err
	}
	if !isIndex(img) {
		return nil, fmt.Errorf("image %s has one platform%.0w", id, errdefs.ErrInvalidArgument)
	}
	insts, err := s.instances(img)
	if err != nil {
		return nil, err
	}
	all, err := s.cs.Images()
	if err != nil {
		return nil, err
	}
	var deleted []ocispec.Descriptor
	var layers []string
	for _, in := range insts {
		if in.img == nil || !platformWanted(*in.desc.Platform, want) {
			continue
		}
		if !s.heldElsewhere(all, img.ID, in.img) {
			ls, err := s.cs.DeleteImage(in.img.ID, true)
			if errors.Is(err, cstorage.ErrImageUsedByContainer) {
				return deleted, fmt.Errorf("platform %s of image %s is used by a container: %w", platforms.FormatAll(*in.desc.Platform), id, errdefs.ErrConflict)
			}
			if err != nil {
				return deleted, fmt.Errorf("storage: deleting image %s: %w", in.img.ID, classify(err))
			}
			layers = append(layers, ls...)
		}
		deleted = append(deleted, in.desc)
	}
	s.removeInitLayers(layers)
	return deleted, nil
}

// heldElsewhere reports whether inst, an instance of index image
// indexID, is named or held by another index image.
func (s *Store) heldElsewhere(all []cstorage.Image, indexID string, inst *cstorage.Image) bool {
	if len(inst.Names) > 0 {
		return true
	}
	for i := range all {
		if all[i].ID == indexID || !isIndex(&all[i]) {
			continue
		}
		insts, err := s.instances(&all[i])
		if err != nil {
			continue
		}
		for _, in := range insts {
			if in.img != nil && in.img.ID == inst.ID {
				return true
			}
		}
	}
	return false
}
