package storage

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	cstorage "go.podman.io/storage"
)

// An image's ID is the digest of its manifest, as in Docker's containerd
// image store. hutch keeps layers uncompressed, so the manifest that
// names an image is the one it can always write out again: the OCI
// manifest of its config and its uncompressed layers, which docker save
// writes and docker load keeps. It depends on the config and the layers
// alone, which never change for an image of the store, so it is made when
// first needed and kept in memory (Store.manifests), never written. A
// pulled image's ID is therefore not the registry's manifest digest; that
// one is among its RepoDigests.

// imageManifest is an image's manifest: its digest and size.
type imageManifest struct {
	digest digest.Digest
	size   int64
}

// ociManifest is the OCI manifest of an image whose config is config and
// whose layers are the uncompressed diffs layers.
func ociManifest(config []byte, layers []ocispec.Descriptor) ([]byte, error) {
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))},
		Layers:    layers,
	}
	if m.Layers == nil {
		m.Layers = []ocispec.Descriptor{}
	}
	return json.Marshal(m)
}

// idOf returns img's ID ("sha256:…"). An image whose manifest cannot be
// made (its config or a layer unreadable) keeps the store's ID, its
// config's digest.
func (s *Store) idOf(img *cstorage.Image) string {
	if isIndex(img) {
		return "sha256:" + img.ID
	}
	m, err := s.manifestOf(img)
	if err != nil {
		s.log.Warn("storage: image without a manifest keeps its config's digest as ID", "image", img.ID, "err", err)
		return "sha256:" + img.ID
	}
	return m.digest.String()
}

// manifestOf returns img's manifest, made the first time it is asked for.
func (s *Store) manifestOf(img *cstorage.Image) (imageManifest, error) {
	if v, ok := s.manifests.Load(img.ID); ok {
		return v.(imageManifest), nil
	}
	b, err := s.makeManifest(img)
	if err != nil {
		return imageManifest{}, err
	}
	m := imageManifest{digest: digest.FromBytes(b), size: int64(len(b))}
	s.manifests.Store(img.ID, m)
	return m, nil
}

// deleteImage deletes the store's image id (its layers too, where no
// other image uses them) and forgets what was cached of it.
func (s *Store) deleteImage(id string) ([]string, error) {
	layers, err := s.cs.DeleteImage(id, true)
	if err != nil {
		return nil, err
	}
	if v, ok := s.manifests.LoadAndDelete(id); ok {
		s.ids.Delete(v.(imageManifest).digest.Encoded())
	}
	s.ids.Delete(id)
	return layers, nil
}

// makeManifest makes img's manifest from its config and layers.
func (s *Store) makeManifest(img *cstorage.Image) ([]byte, error) {
	config, err := s.configBlob(img)
	if err != nil {
		return nil, err
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("parsing its config: %w", err)
	}
	chain, err := s.imageLayers(img, cfg.RootFS.DiffIDs)
	if err != nil {
		return nil, err
	}
	layers := make([]ocispec.Descriptor, len(chain))
	for i, l := range chain {
		size := l.UncompressedSize
		if l.UncompressedDigest != cfg.RootFS.DiffIDs[i] || size < 0 {
			// Learn both from the diff itself, as docker save does.
			f, d, n, err := s.spoolDiff(l.ID)
			if err != nil {
				return nil, err
			}
			os.Remove(f)
			if d != cfg.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("layer %s is %s, its config says %s", l.ID, d, cfg.RootFS.DiffIDs[i])
			}
			size = n
		}
		layers[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: cfg.RootFS.DiffIDs[i], Size: size}
	}
	return ociManifest(config, layers)
}

// descriptor is img's manifest's descriptor: Docker's image inspect
// Descriptor (nil when it cannot be made).
func (s *Store) descriptor(img *cstorage.Image) *ocispec.Descriptor {
	m, err := s.manifestOf(img)
	if err != nil {
		return nil
	}
	return &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: m.digest, Size: m.size}
}

// storedID returns the ID of the image the store keeps under its config's
// digest hexConfig: the ID of an image just copied in.
func (s *Store) storedID(hexConfig string) (string, error) {
	img, err := s.cs.Image(hexConfig)
	if err != nil {
		return "", fmt.Errorf("storage: image %s: %w", hexConfig, classify(err))
	}
	return s.idOf(img), nil
}
