package storage

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	cstorage "go.podman.io/storage"
)

// An image's ID is the digest of its manifest, as in Docker's containerd
// image store. hutch keeps layers uncompressed, so the manifest that
// names an image is the one it can always write out again: the OCI
// manifest of its config and its uncompressed layers, which docker save
// writes and docker load keeps. An image keeps it in the manifestKey
// item; an image stored before it had one gets it when it is first
// looked at. A pulled image's ID is therefore not the registry's manifest
// digest; that one is among its RepoDigests.

// manifestKey names the image big-data item holding the manifest that
// gives the image its ID.
const manifestKey = "hutch-manifest"

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

// idOf returns img's ID ("sha256:…"), giving it its manifest first when it
// has none. An image whose manifest cannot be made (its config or a
// layer unreadable) keeps the store's ID, its config's digest.
func (s *Store) idOf(img *cstorage.Image) string {
	if isIndex(img) {
		return "sha256:" + img.ID
	}
	if d := img.BigDataDigests[manifestKey]; d != "" {
		return d.String()
	}
	d, err := s.stamp(img)
	if err != nil {
		s.log.Warn("storage: image without a manifest keeps its config's digest as ID", "image", img.ID, "err", err)
		return "sha256:" + img.ID
	}
	return d.String()
}

// stamp writes img's manifest (manifestKey) and returns its digest.
func (s *Store) stamp(img *cstorage.Image) (digest.Digest, error) {
	config, err := s.configBlob(img)
	if err != nil {
		return "", err
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(config, &cfg); err != nil {
		return "", fmt.Errorf("parsing its config: %w", err)
	}
	var chain []*cstorage.Layer
	for id := img.TopLayer; id != ""; {
		l, err := s.cs.Layer(id)
		if err != nil {
			return "", fmt.Errorf("reading layer %s: %w", id, err)
		}
		chain = append(chain, l)
		id = l.Parent
	}
	slices.Reverse(chain)
	if len(chain) != len(cfg.RootFS.DiffIDs) {
		return "", fmt.Errorf("its config lists %d layers, the store holds %d", len(cfg.RootFS.DiffIDs), len(chain))
	}
	layers := make([]ocispec.Descriptor, len(chain))
	for i, l := range chain {
		size := l.UncompressedSize
		if l.UncompressedDigest != cfg.RootFS.DiffIDs[i] || size < 0 {
			// Learn both from the diff itself, as docker save does.
			f, d, n, err := s.spoolDiff(l.ID)
			if err != nil {
				return "", err
			}
			os.Remove(f)
			if d != cfg.RootFS.DiffIDs[i] {
				return "", fmt.Errorf("layer %s is %s, its config says %s", l.ID, d, cfg.RootFS.DiffIDs[i])
			}
			size = n
		}
		layers[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: cfg.RootFS.DiffIDs[i], Size: size}
	}
	b, err := ociManifest(config, layers)
	if err != nil {
		return "", err
	}
	if err := s.cs.SetImageBigData(img.ID, manifestKey, b, nil); err != nil {
		return "", fmt.Errorf("storage: writing the manifest of image %s: %w", img.ID, classify(err))
	}
	d := digest.FromBytes(b)
	if img.BigDataDigests == nil {
		img.BigDataDigests = map[string]digest.Digest{}
	}
	img.BigDataDigests[manifestKey] = d
	if img.BigDataSizes == nil {
		img.BigDataSizes = map[string]int64{}
	}
	img.BigDataSizes[manifestKey] = int64(len(b))
	return d, nil
}

// descriptor is img's manifest's descriptor: Docker's image inspect
// Descriptor.
func (s *Store) descriptor(img *cstorage.Image) *ocispec.Descriptor {
	id := s.idOf(img)
	size, ok := img.BigDataSizes[manifestKey]
	if !ok {
		return nil
	}
	return &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(id), Size: size}
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
