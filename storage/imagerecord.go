package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	cstorage "go.podman.io/storage"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// The image service's view of the store (engine.ImageStore): images with
// their references, config and layers, and the changes Docker makes to
// them (tag, untag, delete).

// ListImages returns every image of the store, but the instances of
// multi-platform images that nothing else names (indeximage.go).
func (s *Store) ListImages(ctx context.Context) ([]imagestore.Image, error) {
	imgs, err := s.cs.Images()
	if err != nil {
		return nil, fmt.Errorf("storage: listing images: %w", err)
	}
	layers, err := s.layerIndex()
	if err != nil {
		return nil, err
	}
	held := s.indexHeld(imgs, "")
	out := make([]imagestore.Image, 0, len(imgs))
	for i := range imgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		img := &imgs[i]
		switch {
		case isIndex(img):
			rec, err := s.indexRecord(img, layers, nil)
			if err != nil {
				s.log.Warn("storage: unreadable image index", "image", img.ID, "err", err)
				continue
			}
			out = append(out, *rec)
		case held[img.ID] && len(img.Names) == 0:
		default:
			out = append(out, *s.record(img, layers))
		}
	}
	return out, nil
}

// LookupImage finds ref (see Store.Image) and describes it, with the graph
// driver's data about its top layer.
func (s *Store) LookupImage(ctx context.Context, ref string) (*imagestore.Image, error) {
	return s.LookupImagePlatform(ctx, ref, nil)
}

// LookupImagePlatform is LookupImage; a multi-platform image is described
// with the config and layers of platform want's image (nil: the host's).
func (s *Store) LookupImagePlatform(ctx context.Context, ref string, want *ocispec.Platform) (*imagestore.Image, error) {
	img, err := s.lookup(ref)
	if err != nil {
		return nil, err
	}
	layers, err := s.layerIndex()
	if err != nil {
		return nil, err
	}
	var rec *imagestore.Image
	if isIndex(img) {
		if rec, err = s.indexRecord(img, layers, want); err != nil {
			if errors.Is(err, errNoPlatform) {
				return nil, noPlatform(ref, *want)
			}
			return nil, err
		}
	} else {
		rec = s.record(img, layers)
	}
	if top := topLayerOf(rec); top != "" {
		if d, err := s.cs.GraphDriver(); err == nil {
			if data, err := d.Metadata(top); err == nil {
				rec.DriverData = data
			}
		}
	}
	return rec, nil
}

// topLayerOf is the store's ID of rec's top layer ("" for none).
func topLayerOf(rec *imagestore.Image) string {
	if len(rec.Layers) == 0 {
		return ""
	}
	return rec.Layers[len(rec.Layers)-1].ID
}

// layerIndex reads every layer once: an image's chain is walked in memory.
func (s *Store) layerIndex() (map[string]*cstorage.Layer, error) {
	ls, err := s.cs.Layers()
	if err != nil {
		return nil, fmt.Errorf("storage: listing layers: %w", err)
	}
	m := make(map[string]*cstorage.Layer, len(ls))
	for i := range ls {
		m[ls[i].ID] = &ls[i]
	}
	return m, nil
}

// record converts a library image. A config that cannot be read leaves
// Config nil rather than hiding the image: it must stay removable.
func (s *Store) record(img *cstorage.Image, layers map[string]*cstorage.Layer) *imagestore.Image {
	out := &imagestore.Image{ID: s.idOf(img), Created: img.Created, Descriptor: s.descriptor(img)}
	tags, digests := s.refs(img)
	for _, r := range append(tags, digests...) {
		out.Refs = append(out.Refs, r.String())
	}
	m := s.meta(img)
	out.Parent, out.LastTagTime = m.Parent, m.LastTagTime
	for id := img.TopLayer; id != ""; {
		l := layers[id]
		if l == nil {
			s.log.Warn("storage: image layer missing", "image", img.ID, "layer", id)
			break
		}
		size := l.UncompressedSize
		if size <= 0 {
			if n, err := s.cs.DiffSize(l.Parent, l.ID); err == nil {
				size = n
			}
		}
		out.Layers = append(out.Layers, imagestore.Layer{ID: l.ID, DiffID: l.UncompressedDigest, Size: size})
		id = l.Parent
	}
	slices.Reverse(out.Layers)
	if b, err := s.cs.ImageBigData(img.ID, "sha256:"+img.ID); err == nil {
		var cfg struct {
			dockerspec.DockerOCIImage
			Comment         string                 `json:"comment"`
			Container       string                 `json:"container"`
			ContainerConfig *containertypes.Config `json:"container_config"`
		}
		if err := json.Unmarshal(b, &cfg); err == nil {
			out.Config, out.Comment = &cfg.DockerOCIImage, cfg.Comment
			out.Container, out.ContainerConfig = cfg.Container, cfg.ContainerConfig
			if cfg.Created != nil && !cfg.Created.IsZero() {
				out.Created = *cfg.Created
			}
		}
	}
	return out
}

// TagImage adds the fully qualified tagged name to image id. The store
// moves the name off any image that had it, as Docker moves a tag.
func (s *Store) TagImage(ctx context.Context, id, name string) error {
	named, err := imageName("tag", name)
	if err != nil {
		return err
	}
	img, err := s.byID(id)
	if err != nil {
		return err
	}
	if err := s.cs.AddNames(img.ID, []string{named.String()}); err != nil {
		if errors.Is(err, cstorage.ErrImageUnknown) {
			return noSuchImage(id)
		}
		return fmt.Errorf("storage: tagging %s: %w", id, err)
	}
	return s.updateMeta(img.ID, func(m *imageMeta) bool {
		m.LastTagTime = time.Now().UTC()
		return true
	})
}

// UntagImage removes a tag or digest reference of image id: the name, and
// for a digest reference the repo@digest a pull recorded.
func (s *Store) UntagImage(ctx context.Context, id, ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return invalidReference(err)
	}
	img, err := s.byID(id)
	if err != nil {
		return err
	}
	hexID := img.ID
	if slices.Contains(img.Names, named.String()) {
		if err := s.cs.RemoveNames(hexID, []string{named.String()}); err != nil {
			return fmt.Errorf("storage: untagging %s: %w", named, classify(err))
		}
	}
	c, ok := named.(reference.Canonical)
	if !ok {
		return nil
	}
	return s.updateMeta(hexID, func(m *imageMeta) bool {
		ds := m.RepoDigests[c.Name()]
		if !slices.Contains(ds, c.Digest()) {
			return false
		}
		ds = slices.DeleteFunc(slices.Clone(ds), func(d digest.Digest) bool { return d == c.Digest() })
		if len(ds) == 0 {
			delete(m.RepoDigests, c.Name())
		} else {
			m.RepoDigests[c.Name()] = ds
		}
		return true
	})
}

// DeleteImage deletes image id, its names and metadata, and the layers no
// other image or container uses. It returns errdefs.ErrNotFound for an
// unknown image and errdefs.ErrConflict when a container's rootfs is made
// from it.
func (s *Store) DeleteImage(ctx context.Context, id string) ([]string, error) {
	img, err := s.byID(id)
	if err != nil {
		return nil, err
	}
	if isIndex(img) {
		return s.deleteIndex(img)
	}
	layers, err := s.deleteImage(img.ID)
	switch {
	case errors.Is(err, cstorage.ErrImageUsedByContainer):
		return nil, fmt.Errorf("image %s is used by a container: %w", id, errdefs.ErrConflict)
	case errors.Is(err, cstorage.ErrImageUnknown), errors.Is(err, cstorage.ErrNotAnImage):
		return nil, noSuchImage(id)
	case err != nil:
		return nil, fmt.Errorf("storage: deleting image %s: %w", id, err)
	}
	s.removeInitLayers(layers)
	return layers, nil
}
