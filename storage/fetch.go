package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/pkg/blobinfocache/none"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"
)

// The layer fetcher does what Docker's puller does: download the missing
// layer blobs concurrently into temporary files (verifying their digests),
// and apply them in order as soon as each one and its parent are ready, with
// a single decompression. containers/image's storage destination instead
// decompresses every blob twice (once to compute its DiffID while
// downloading, once to apply it), which costs a third of a CPU-bound pull.
// copy.Image runs afterwards and finds every layer in the store, so it still
// writes the image record, names and manifests.

// layerFetch is one layer of the image being pulled.
type layerFetch struct {
	blob   types.BlobInfo
	diffID digest.Digest // from the config; verified against the content
	id     string        // storage layer ID, as containers/image computes it
	parent string
	exists bool

	ready chan struct{} // closed when file or err is set
	file  string
	err   error
}

// maxConfigSize bounds the image config read before the pull.
const maxConfigSize = 16 << 20

// planFetch reads the config and lays out the layers with the IDs
// containers/image will look for. It returns nil when the image is not one
// the fetcher handles (foreign or encrypted layers, no DiffIDs); copy.Image
// then does everything.
func (s *Store) planFetch(ctx context.Context, src types.ImageSource, man manifest.Manifest) ([]*layerFetch, error) {
	cfgInfo := man.ConfigInfo()
	if cfgInfo.Digest == "" {
		return nil, nil
	}
	rc, _, err := src.GetBlob(ctx, cfgInfo, none.NoCache)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(rc, maxConfigSize))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("reading image config: %w", err)
	}
	if cfgInfo.Digest.Validate() != nil || cfgInfo.Digest.Algorithm().FromBytes(raw) != cfgInfo.Digest {
		return nil, fmt.Errorf("image config does not match digest %s", cfgInfo.Digest)
	}
	var cfg struct {
		RootFS struct {
			DiffIDs []digest.Digest `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parsing image config: %w", err)
	}
	var infos []types.BlobInfo
	for _, li := range man.LayerInfos() {
		if li.EmptyLayer {
			continue
		}
		if len(li.URLs) > 0 || strings.Contains(li.MediaType, "encrypted") || li.Digest.Validate() != nil {
			return nil, nil
		}
		infos = append(infos, li.BlobInfo)
	}
	if len(infos) != len(cfg.RootFS.DiffIDs) {
		return nil, nil
	}
	var out []*layerFetch
	parent := ""
	for i, info := range infos {
		diffID := cfg.RootFS.DiffIDs[i]
		if diffID.Validate() != nil {
			return nil, nil
		}
		id := chainID(parent, diffID)
		_, err := s.cs.Layer(id)
		out = append(out, &layerFetch{blob: info, diffID: diffID, id: id, parent: parent, exists: err == nil, ready: make(chan struct{})})
		parent = id
	}
	return out, nil
}

// chainID is containers/image's storage layer ID for a layer with diffID on
// top of parent (storage_dest.go layerID); matching it lets copy.Image reuse
// the layers the fetcher made instead of copying them.
func chainID(parent string, diffID digest.Digest) string {
	if parent == "" {
		return diffID.Encoded()
	}
	return digest.Canonical.FromString(parent + "+" + diffID.Encoded()).Encoded()
}

// fetchLayers fetches the missing layers: streamed into staging
// directories where the driver allows it (fetchstage.go), else downloaded
// to files first.
func (s *Store) fetchLayers(ctx context.Context, src types.ImageSource, layers []*layerFetch, parallel int, hooked *hookedStore) error {
	if s.canStage() {
		return s.streamLayers(ctx, src, layers, parallel, hooked)
	}
	return s.downloadLayers(ctx, src, layers, parallel, hooked)
}

// downloadLayers downloads the missing layers, at most parallel at a time
// in manifest order, and applies them in order through hooked (which
// reports extraction and remembers what was created).
func (s *Store) downloadLayers(ctx context.Context, src types.ImageSource, layers []*layerFetch, parallel int, hooked *hookedStore) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// One download per distinct blob; a blob used twice is applied twice,
	// and its file is removed after its last use.
	first := map[digest.Digest]*layerFetch{}
	uses := map[digest.Digest]int{}
	var downloads []*layerFetch
	for _, l := range layers {
		if l.exists {
			continue
		}
		if uses[l.blob.Digest]++; first[l.blob.Digest] == nil {
			first[l.blob.Digest] = l
			downloads = append(downloads, l)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		slots := make(chan struct{}, parallel)
		finished := make(chan struct{})
		for i, l := range downloads {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				for _, rest := range downloads[i:] {
					rest.err = ctx.Err()
					close(rest.ready)
				}
				for range i {
					<-finished
				}
				return
			}
			go func() {
				l.file, l.err = s.download(ctx, src, l.blob, hooked.progress)
				close(l.ready)
				<-slots
				finished <- struct{}{}
			}()
		}
		for range downloads {
			<-finished
		}
	}()
	defer func() {
		cancel()
		<-done
		for _, l := range downloads {
			if l.file != "" {
				os.Remove(l.file)
			}
		}
	}()

	for _, l := range layers {
		if l.exists {
			continue
		}
		dl := first[l.blob.Digest]
		<-dl.ready
		if dl.err != nil {
			return dl.err
		}
		if err := s.applyLayer(l, dl.file, hooked); err != nil {
			return err
		}
		if uses[l.blob.Digest]--; uses[l.blob.Digest] == 0 {
			os.Remove(dl.file)
			dl.file = ""
		}
	}
	return nil
}

// download copies one blob into a temporary file, verifying size and digest.
func (s *Store) download(ctx context.Context, src types.ImageSource, blob types.BlobInfo, progress *pullProgress) (string, error) {
	rc, _, err := src.GetBlob(ctx, blob, none.NoCache)
	if err != nil {
		return "", fmt.Errorf("reading blob %s: %w", blob.Digest, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(s.tmpDir, "layer-")
	if err != nil {
		return "", err
	}
	verifier := blob.Digest.Verifier()
	r := &progressReader{r: rc, total: blob.Size, report: func(n int64) { progress.fetchRead(blob.Digest, n) }}
	n, err := io.Copy(io.MultiWriter(f, verifier), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		err = fmt.Errorf("reading blob %s: %w", blob.Digest, err)
	case blob.Size >= 0 && n != blob.Size:
		err = fmt.Errorf("blob %s: read %d bytes, manifest says %d", blob.Digest, n, blob.Size)
	case !verifier.Verified():
		err = fmt.Errorf("blob %s: content does not match its digest", blob.Digest)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	progress.fetched(blob.Digest)
	return f.Name(), nil
}

// applyLayer extracts the downloaded blob as layer l and checks that its
// content is what the config announced.
func (s *Store) applyLayer(l *layerFetch, file string, hooked *hookedStore) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := &cstorage.LayerOptions{OriginalDigest: l.blob.Digest} // verified by download
	if size := l.blob.Size; size >= 0 {
		opts.OriginalSize = &size
	}
	layer, _, err := hooked.PutLayer(l.id, l.parent, nil, "", false, opts, f)
	if errors.Is(err, cstorage.ErrDuplicateID) {
		// A concurrent pull applied the same layer first.
		layer, err = s.cs.Layer(l.id)
	}
	if err != nil {
		return fmt.Errorf("applying layer %s: %w", l.blob.Digest, err)
	}
	if layer.UncompressedDigest != l.diffID {
		if derr := s.cs.DeleteLayer(layer.ID); derr != nil {
			s.log.Warn("storage: cannot delete mismatching layer", "layer", layer.ID, "err", derr)
		}
		return fmt.Errorf("layer %s has content %s, the image config says %s: layers from manifest don't match image configuration",
			l.blob.Digest, layer.UncompressedDigest, l.diffID)
	}
	return nil
}
