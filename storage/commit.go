package storage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/archive"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// docker commit and docker diff. A commit takes the road of import: the
// container layer's diff is written once to a file (leaving out the mount
// points the engine names), applied by the store as a layer on the image's
// top layer with the ID containers/image gives it, and copy.Image then
// copies the image from a source that serves the new config and manifest
// (commitsource.go): every layer is found in place, so only the image
// record, its names and manifest are written.

// RootfsChanges lists the changes of a container's layer against its
// image, sorted by path.
func (s *Store) RootfsChanges(ctx context.Context, rootfsID string) ([]containertypes.FilesystemChange, error) {
	c, err := s.cs.Container(rootfsID)
	if err != nil {
		return nil, fmt.Errorf("storage: rootfs %s: %w", rootfsID, classify(err))
	}
	changes, err := s.cs.Changes("", c.LayerID)
	if err != nil {
		return nil, fmt.Errorf("storage: changes of rootfs %s: %w", rootfsID, classify(err))
	}
	out := make([]containertypes.FilesystemChange, 0, len(changes))
	for _, ch := range changes {
		kind := containertypes.ChangeModify
		switch ch.Kind {
		case archive.ChangeAdd:
			kind = containertypes.ChangeAdd
		case archive.ChangeDelete:
			kind = containertypes.ChangeDelete
		}
		out = append(out, containertypes.FilesystemChange{Path: ch.Path, Kind: kind})
	}
	return out, nil
}

// CommitImage stores the changes of rootfs rootfsID as a new image (see
// engine.ImageStore). An unknown rootfs is errdefs.ErrNotFound, a bad name
// errdefs.ErrInvalidArgument.
func (s *Store) CommitImage(ctx context.Context, rootfsID string, req imagestore.CommitImage) (string, error) {
	var named reference.Named
	if req.Name != "" {
		n, err := imageName("commit", req.Name)
		if err != nil {
			return "", err
		}
		named = n
	}
	c, err := s.cs.Container(rootfsID)
	if err != nil {
		return "", fmt.Errorf("storage: rootfs %s: %w", rootfsID, classify(err))
	}
	top, err := s.cs.Layer(c.LayerID)
	if err != nil {
		return "", fmt.Errorf("storage: layer of rootfs %s: %w", rootfsID, classify(err))
	}
	chain, err := s.layerChain(top.Parent)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(s.tmpDir, "commit-")
	if err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	defer os.RemoveAll(dir)
	diff, err := s.writeDiff(ctx, c.LayerID, req.Exclude, dir)
	if err != nil {
		return "", fmt.Errorf("storage: reading the changes of rootfs %s: %w", rootfsID, err)
	}

	src, err := commitSourceFor(req, chain, diff)
	if err != nil {
		return "", err
	}
	sys, err := s.systemContext(ctx, "", PullOptions{})
	if err != nil {
		return "", err
	}
	id := src.configDigest.Encoded()
	err = s.copyInto(ctx, sys, src.ref, named, id, func(h *hookedStore) error {
		if diff.empty {
			return nil
		}
		return s.putLayerOn(h, top.Parent, diff)
	})
	if err != nil {
		return "", fmt.Errorf("storage: committing rootfs %s: %w", rootfsID, err)
	}
	if err := s.SetImageParent(ctx, id, req.Parent); err != nil {
		return "", err
	}
	if named != nil {
		if err := s.updateMeta(id, func(m *imageMeta) bool { m.LastTagTime = time.Now().UTC(); return true }); err != nil {
			return "", err
		}
	}
	return s.storedID(id)
}

// chainLayer is one layer of the image a commit builds on.
type chainLayer struct {
	diffID digest.Digest
	size   int64
}

// layerChain lists the layers from the bottom up to top ("" for none).
func (s *Store) layerChain(top string) ([]chainLayer, error) {
	var out []chainLayer
	for id := top; id != ""; {
		l, err := s.cs.Layer(id)
		if err != nil {
			return nil, fmt.Errorf("storage: layer %s: %w", id, classify(err))
		}
		if l.UncompressedDigest == "" {
			return nil, fmt.Errorf("storage: layer %s has no known content digest: it cannot be committed on", id)
		}
		size := l.UncompressedSize
		if size <= 0 {
			if size, err = s.cs.DiffSize(l.Parent, l.ID); err != nil {
				return nil, fmt.Errorf("storage: size of layer %s: %w", id, err)
			}
		}
		out = append(out, chainLayer{diffID: l.UncompressedDigest, size: size})
		id = l.Parent
	}
	slices.Reverse(out)
	return out, nil
}

// diffLayer is a container's changes written as an uncompressed tar.
type diffLayer struct {
	path   string
	diffID digest.Digest
	size   int64
	empty  bool // no entry: Docker adds no layer then
}

// writeDiff writes the diff of layer id against its parent to a file of
// dir, leaving out the entries whose paths ("/etc/hosts") exclude lists.
// The store's lock on the layers is held while the diff is read, so the
// diff is read whole before anything else is asked of the store.
func (s *Store) writeDiff(ctx context.Context, id string, exclude map[string]bool, dir string) (diffLayer, error) {
	uncompressed := archive.Uncompressed
	rc, err := s.cs.Diff("", id, &cstorage.DiffOptions{Compression: &uncompressed})
	if err != nil {
		return diffLayer{}, classify(err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(dir, "layer-")
	if err != nil {
		return diffLayer{}, err
	}
	defer f.Close()
	digester := digest.Canonical.Digester()
	counter := &countWriter{}
	tw := tar.NewWriter(io.MultiWriter(f, digester.Hash(), counter))
	tr := tar.NewReader(rc)
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return diffLayer{}, err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return diffLayer{}, err
		}
		if exclude[path.Clean("/"+hdr.Name)] {
			continue
		}
		// PAX keeps extended attributes (file capabilities) and
		// sub-second times, whatever format the store wrote.
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return diffLayer{}, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return diffLayer{}, err
		}
		entries++
	}
	if err := tw.Close(); err != nil {
		return diffLayer{}, err
	}
	if err := f.Close(); err != nil {
		return diffLayer{}, err
	}
	d := digester.Digest()
	p := filepath.Join(dir, d.Encoded())
	if err := os.Rename(f.Name(), p); err != nil {
		return diffLayer{}, err
	}
	return diffLayer{path: p, diffID: d, size: counter.n, empty: entries == 0}, nil
}

// putLayerOn applies the diff as a layer on parent, with the ID
// containers/image computes for it, so that copy.Image finds it. A layer
// with that ID already stored has the same content.
func (s *Store) putLayerOn(h *hookedStore, parent string, diff diffLayer) error {
	f, err := os.Open(diff.path)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := &cstorage.LayerOptions{OriginalDigest: diff.diffID, UncompressedDigest: diff.diffID}
	_, _, err = h.PutLayer(chainID(parent, diff.diffID), parent, nil, "", false, opts, f)
	if err != nil && !errors.Is(err, cstorage.ErrDuplicateID) {
		return fmt.Errorf("applying the layer: %w", err)
	}
	return nil
}

// commitConfig is the new image's config blob: req.Image with the rootfs of
// chain plus the diff, and the new history entry.
func commitConfig(req imagestore.CommitImage, chain []chainLayer, diff diffLayer) ([]byte, error) {
	img := req.Image
	img.RootFS = ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{}}
	for _, l := range chain {
		img.RootFS.DiffIDs = append(img.RootFS.DiffIDs, l.diffID)
	}
	h := req.History
	h.EmptyLayer = diff.empty
	if !diff.empty {
		img.RootFS.DiffIDs = append(img.RootFS.DiffIDs, diff.diffID)
	}
	img.History = append(slices.Clone(img.History), h)
	return json.Marshal(struct {
		dockerspec.DockerOCIImage
		Comment         string                 `json:"comment,omitempty"`
		Container       string                 `json:"container,omitempty"`
		ContainerConfig *containertypes.Config `json:"container_config,omitempty"`
	}{img, req.Comment, req.Container, req.ContainerConfig})
}

// commitManifest is the OCI manifest of the new image: its layers by their
// uncompressed digests, as the store holds them.
func commitManifest(config ocispec.Descriptor, chain []chainLayer, diff diffLayer) ([]byte, error) {
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    config,
		Layers:    []ocispec.Descriptor{},
	}
	for _, l := range chain {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: l.diffID, Size: l.size})
	}
	if !diff.empty {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: diff.diffID, Size: diff.size})
	}
	return json.Marshal(m)
}
