package storage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/pkg/compression"
	"go.podman.io/image/v5/signature"
	istorage "go.podman.io/image/v5/storage"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// Images that do not come from a registry (import, load) are written the
// way pulls are: copy.Image from a source into the containers-storage
// transport, which records the image, its names and manifest. The copy goes
// through a hookedStore so that a failure removes the layers it created.

// acceptAnything is the signature policy of every copy: Docker verifies no
// signatures.
func acceptAnything() (*signature.PolicyContext, error) {
	return signature.NewPolicyContext(&signature.Policy{
		Default: signature.PolicyRequirements{signature.NewPRInsecureAcceptAnything()},
	})
}

// copyInto copies src into the store as image id (hex) named named (nil:
// no name), removing the layers it created if it fails.
func (s *Store) copyInto(ctx context.Context, sys *types.SystemContext, src types.ImageReference, named reference.Named, id string, before func(*hookedStore) error) error {
	return s.copyIntoReporting(ctx, sys, src, named, id, before, nil)
}

// copyIntoReporting is copyInto with report, when not nil, called with
// the copy's progress events, one at a time, all before it returns.
func (s *Store) copyIntoReporting(ctx context.Context, sys *types.SystemContext, src types.ImageReference, named reference.Named, id string, before func(*hookedStore) error, report func(types.ProgressProperties)) error {
	s.beginPull()
	hooked := &hookedStore{Store: s.cs, locks: &s.layerLocks, stage: s.putStaged}
	ok := false
	defer func() {
		if ok {
			s.endPull(nil)
		} else {
			s.endPull(hooked.createdLayers())
		}
	}()
	if before != nil {
		if err := before(hooked); err != nil {
			return err
		}
	}
	destRef, err := istorage.Transport.NewStoreReference(hooked, named, id)
	if err != nil {
		return err
	}
	policy, err := acceptAnything()
	if err != nil {
		return err
	}
	defer policy.Destroy()
	opts := &copy.Options{
		SourceCtx:        sys,
		DestinationCtx:   sys,
		RemoveSignatures: true,
	}
	if report != nil {
		events := make(chan types.ProgressProperties, 64)
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for ev := range events {
				report(ev)
			}
		}()
		defer func() { close(events); <-drained }()
		opts.Progress, opts.ProgressInterval = events, 100*time.Millisecond
	}
	if _, err := copy.Image(ctx, policy, destRef, src, opts); err != nil {
		return err
	}
	ok = true
	return nil
}

// ImportImage stores rootfs (a tar, possibly compressed) as a one-layer
// image, as `docker import` does. The layer is extracted once, by the store,
// from a file holding the uncompressed tar; copy.Image then finds it by ID
// and writes the image record from an OCI layout around that file.
// A body that is not a tar archive is errdefs.ErrInvalidArgument.
func (s *Store) ImportImage(ctx context.Context, rootfs io.Reader, cfg imagestore.ImportConfig, name string) (string, error) {
	var named reference.Named
	if name != "" {
		n, err := imageName("import", name)
		if err != nil {
			return "", err
		}
		named = n
	}
	dir, err := os.MkdirTemp(s.tmpDir, "import-")
	if err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	defer os.RemoveAll(dir)
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o700); err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	layerFile, diffID, size, err := writeRootfs(rootfs, blobs)
	if err != nil {
		return "", err
	}

	img := cfg.Image
	img.RootFS = ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}}
	config, err := json.Marshal(struct {
		dockerspec.DockerOCIImage
		Comment string `json:"comment,omitempty"`
	}{img, cfg.Comment})
	if err != nil {
		return "", err
	}
	configDesc, err := writeBlob(blobs, ocispec.MediaTypeImageConfig, config)
	if err != nil {
		return "", err
	}
	man, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayer, Digest: diffID, Size: size}},
	})
	if err != nil {
		return "", err
	}
	manDesc, err := writeBlob(blobs, ocispec.MediaTypeImageManifest, man)
	if err != nil {
		return "", err
	}
	if err := writeLayout(dir, manDesc); err != nil {
		return "", err
	}

	sys, err := s.systemContext(ctx, "", PullOptions{})
	if err != nil {
		return "", err
	}
	src, err := layout.NewReference(dir, "")
	if err != nil {
		return "", err
	}
	id := configDesc.Digest.Encoded()
	err = s.copyInto(ctx, sys, src, named, id, func(h *hookedStore) error {
		return s.putLayerFile(h, diffID.Encoded(), layerFile, diffID)
	})
	if err != nil {
		return "", fmt.Errorf("storage: importing: %w", archiveContentError(err))
	}
	if named != nil {
		if err := s.updateMeta(id, func(m *imageMeta) bool { m.LastTagTime = time.Now().UTC(); return true }); err != nil {
			return "", err
		}
	}
	return s.storedID(id)
}

// writeRootfs decompresses the rootfs into a file of dir while checking
// that it is a tar archive, and returns the file, the digest and size of
// the uncompressed tar.
func writeRootfs(rootfs io.Reader, dir string) (path string, d digest.Digest, size int64, err error) {
	plain, _, err := compression.AutoDecompress(rootfs)
	if err != nil {
		return "", "", 0, fmt.Errorf("reading the rootfs archive: %w", errors.Join(err, errdefs.ErrInvalidArgument))
	}
	defer plain.Close()
	f, err := os.CreateTemp(dir, "layer-")
	if err != nil {
		return "", "", 0, fmt.Errorf("storage: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	digester := digest.Canonical.Digester()
	counter := &countWriter{}
	// Errors writing the file are the machine's (a full disk), not the
	// archive's: spool keeps them apart from the reader's.
	spool := &errWriter{w: f}
	sink := io.MultiWriter(spool, digester.Hash(), counter)
	// Walking the headers validates the archive; the tee keeps every byte,
	// the padding after the end marker included.
	tr := tar.NewReader(io.TeeReader(plain, sink))
	for {
		_, err = tr.Next()
		if err == io.EOF {
			break
		}
		if spool.err != nil {
			return "", "", 0, fmt.Errorf("storage: spooling the rootfs: %w", spool.err)
		}
		if err != nil {
			return "", "", 0, fmt.Errorf("the rootfs is not a valid tar archive: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
	}
	// Read, never WriteTo: pgzip's WriteTo breaks after reads.
	if _, err = io.Copy(sink, struct{ io.Reader }{plain}); err != nil {
		if spool.err != nil {
			return "", "", 0, fmt.Errorf("storage: spooling the rootfs: %w", spool.err)
		}
		return "", "", 0, fmt.Errorf("reading the rootfs archive: %w%.0w", err, errdefs.ErrInvalidArgument)
	}
	if counter.n == 0 {
		// No bytes at all is an empty rootfs, as Docker imports it: the
		// layer is a tar archive's end marker alone.
		if _, err = sink.Write(make([]byte, 1024)); err != nil {
			return "", "", 0, fmt.Errorf("storage: spooling the rootfs: %w", err)
		}
	}
	if err = f.Close(); err != nil {
		return "", "", 0, fmt.Errorf("storage: %w", err)
	}
	d = digester.Digest()
	path = filepath.Join(dir, d.Encoded())
	if err = os.Rename(f.Name(), path); err != nil {
		return "", "", 0, fmt.Errorf("storage: %w", err)
	}
	return path, d, counter.n, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// errWriter keeps the first error of w.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// putLayerFile applies the uncompressed tar at path as layer id (no
// parent). A layer with that ID already stored has the same content.
func (s *Store) putLayerFile(h *hookedStore, id, path string, diffID digest.Digest) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = h.PutLayer(id, "", nil, "", false, &cstorage.LayerOptions{OriginalDigest: diffID, UncompressedDigest: diffID}, f)
	if err != nil && !errors.Is(err, cstorage.ErrDuplicateID) {
		return fmt.Errorf("applying the layer: %w", err)
	}
	return nil
}

// writeBlob stores b under its digest in an OCI layout's blob directory.
func writeBlob(dir, mediaType string, b []byte) (ocispec.Descriptor, error) {
	d := digest.FromBytes(b)
	if err := os.WriteFile(filepath.Join(dir, d.Encoded()), b, 0o600); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("storage: %w", err)
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}, nil
}

// writeLayout writes the index and version marker of a one-image OCI layout.
func writeLayout(dir string, man ocispec.Descriptor) error {
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{man},
	})
	if err != nil {
		return err
	}
	marker, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{ocispec.ImageIndexFile: index, ocispec.ImageLayoutFile: marker} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
	}
	return nil
}
