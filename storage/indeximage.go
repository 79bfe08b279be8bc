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
	return s.instancesOf(idx), nil
}

// instancesOf lists idx's platforms (attestations left out), each with
// its stored image when available.
func (s *Store) instancesOf(idx ocispec.Index) []instance {
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
	return out
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
// It returns insts's index of it, -1 when none fits.
func pick(insts []instance, want *ocispec.Platform) int {
	var match platforms.MatchComparer
	if want != nil {
		match = platforms.OnlyStrict(*want)
	} else {
		match = platforms.Default()
	}
	best := -1
	for i, in := range insts {
		if in.img == nil || !match.Match(*in.desc.Platform) {
			continue
		}
		if best < 0 || match.Less(*in.desc.Platform, *insts[best].desc.Platform) {
			best = i
		}
	}
	if best >= 0 || want != nil {
		return best
	}
	for i, in := range insts {
		if in.img != nil {
			return i
		}
	}
	return -1
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
	if i := pick(insts, want); i >= 0 {
		return insts[i].img, nil
	}
	what := "the host's platform"
	if want != nil {
		what = platforms.FormatAll(*want)
	}
	return nil, fmt.Errorf("image %s has no content for %s%.0w", "sha256:"+img.ID, what, errdefs.ErrNotFound)
}

// errNoPlatform is an index image's answer for a platform it has no
// content for (LookupImagePlatform words it as Docker does).
var errNoPlatform = errors.New("no content for the platform")

// indexRecord describes index image img as the image service sees it:
// its ID, names and descriptor, with the config and layers of the
// instance for want (nil: the host's; see pick), and every platform.
func (s *Store) indexRecord(img *cstorage.Image, layers map[string]*cstorage.Layer, want *ocispec.Platform) (*imagestore.Image, error) {
	idx, _, err := s.index(img)
	if err != nil {
		return nil, err
	}
	insts := s.instancesOf(idx)
	chosen := pick(insts, want)
	if chosen < 0 && want != nil {
		return nil, errNoPlatform
	}
	out := &imagestore.Image{Created: img.Created}
	var plats []imagestore.PlatformImage
	for i, in := range insts {
		p := imagestore.PlatformImage{Descriptor: in.desc, Available: in.img != nil}
		if in.img != nil {
			r := s.record(in.img, layers)
			p.ID, p.Size, p.Config = r.ID, r.Size(), r.Config
			if i == chosen {
				out = r
			}
		}
		plats = append(plats, p)
	}
	out.Platforms = plats
	if chosen >= 0 {
		out.Instance = &out.Platforms[chosen]
	}
	out.ID = "sha256:" + img.ID
	mt := idx.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageIndex
	}
	out.Descriptor = &ocispec.Descriptor{MediaType: mt, Digest: digest.Digest(out.ID), Size: img.BigDataSizes[indexKey]}
	out.Refs = nil
	tags, digests := s.refs(img)
	for _, r := range append(tags, digests...) {
		out.Refs = append(out.Refs, r.String())
	}
	m := s.meta(img)
	out.Parent, out.LastTagTime = m.Parent, m.LastTagTime
	return out, nil
}

// indexHeld returns the IDs of the images that index images of imgs,
// but the one of ID except, hold as instances.
func (s *Store) indexHeld(imgs []cstorage.Image, except string) map[string]bool {
	held := map[string]bool{}
	for i := range imgs {
		if !isIndex(&imgs[i]) || imgs[i].ID == except {
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
	all, err := s.cs.Images()
	if err != nil {
		return nil, err
	}
	held := s.indexHeld(all, img.ID)
	if _, err := s.deleteImage(img.ID); err != nil {
		return nil, fmt.Errorf("storage: deleting image %s: %w", img.ID, classify(err))
	}
	var layers []string
	for _, in := range insts {
		if in.img == nil || held[in.img.ID] || len(in.img.Names) > 0 {
			continue
		}
		ls, err := s.deleteImage(in.img.ID)
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
	held := s.indexHeld(all, img.ID)
	var deleted []ocispec.Descriptor
	var layers []string
	for _, in := range insts {
		if in.img == nil || !platformWanted(*in.desc.Platform, want) {
			continue
		}
		if len(in.img.Names) == 0 && !held[in.img.ID] {
			ls, err := s.deleteImage(in.img.ID)
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
