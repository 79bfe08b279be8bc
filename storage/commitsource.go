package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	imgref "go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/image"
	"go.podman.io/image/v5/types"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// A commit's image exists only as a config, a manifest and one layer file
// until copy.Image writes it into the store: commitSource serves them as a
// containers/image source, behind a reference of its own transport (never
// registered, never parsed: it only names the source in messages and
// policy checks, which accept anything).

// commitTransport is the transport of commit sources.
type commitTransport struct{}

func (commitTransport) Name() string { return "hutch-commit" }

func (commitTransport) ParseReference(string) (types.ImageReference, error) {
	return nil, errors.New("hutch-commit references cannot be parsed")
}

func (commitTransport) ValidatePolicyConfigurationScope(string) error { return nil }

// commitRef names one commit's source.
type commitRef struct{ src *commitSource }

func (r commitRef) Transport() types.ImageTransport     { return commitTransport{} }
func (r commitRef) StringWithinTransport() string       { return r.src.configDigest.String() }
func (r commitRef) DockerReference() imgref.Named       { return nil }
func (r commitRef) PolicyConfigurationIdentity() string { return "" }
func (r commitRef) PolicyConfigurationNamespaces() []string {
	return nil
}

func (r commitRef) NewImage(ctx context.Context, sys *types.SystemContext) (types.ImageCloser, error) {
	return image.FromSource(ctx, sys, r.src)
}

func (r commitRef) NewImageSource(context.Context, *types.SystemContext) (types.ImageSource, error) {
	return r.src, nil
}

func (r commitRef) NewImageDestination(context.Context, *types.SystemContext) (types.ImageDestination, error) {
	return nil, errors.New("hutch-commit sources cannot be written to")
}

func (r commitRef) DeleteImage(context.Context, *types.SystemContext) error {
	return errors.New("hutch-commit sources cannot be deleted")
}

// commitSource serves a commit's image. The layers it shares with the
// source image are in the store already (the destination reuses them by
// digest); asking for one is an error rather than a read of the store,
// whose layer lock copy.Image's writes need at the same time.
type commitSource struct {
	ref          commitRef
	manifest     []byte
	config       []byte
	configDigest digest.Digest
	layers       map[digest.Digest]string // layer blobs served from files
}

// commitSourceFor builds the source of a commit's image.
func commitSourceFor(req imagestore.CommitImage, chain []chainLayer, diff diffLayer) (*commitSource, error) {
	config, err := commitConfig(req, chain, diff)
	if err != nil {
		return nil, err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	man, err := commitManifest(desc, chain, diff)
	if err != nil {
		return nil, err
	}
	src := &commitSource{manifest: man, config: config, configDigest: desc.Digest, layers: map[digest.Digest]string{}}
	if !diff.empty {
		src.layers[diff.diffID] = diff.path
	}
	src.ref = commitRef{src: src}
	return src, nil
}

func (c *commitSource) Reference() types.ImageReference { return c.ref }
func (c *commitSource) Close() error                    { return nil }
func (c *commitSource) HasThreadSafeGetBlob() bool      { return true }

func (c *commitSource) GetManifest(_ context.Context, instance *digest.Digest) ([]byte, string, error) {
	if instance != nil {
		return nil, "", fmt.Errorf("commit source has no manifest list: %w", errdefs.ErrNotFound)
	}
	return c.manifest, ocispec.MediaTypeImageManifest, nil
}

func (c *commitSource) GetBlob(_ context.Context, info types.BlobInfo, _ types.BlobInfoCache) (io.ReadCloser, int64, error) {
	if info.Digest == c.configDigest {
		return io.NopCloser(bytes.NewReader(c.config)), int64(len(c.config)), nil
	}
	p, ok := c.layers[info.Digest]
	if !ok {
		return nil, 0, fmt.Errorf("layer %s of the source image is no longer in the store: %w", info.Digest, errdefs.ErrNotFound)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

func (c *commitSource) GetSignatures(context.Context, *digest.Digest) ([][]byte, error) {
	return nil, nil
}

func (c *commitSource) LayerInfosForCopy(context.Context, *digest.Digest) ([]types.BlobInfo, error) {
	return nil, nil
}
