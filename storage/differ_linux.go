package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/vbatts/tar-split/tar/storage"
	"go.podman.io/image/v5/pkg/blobinfocache/none"
	"go.podman.io/image/v5/types"
	graphdriver "go.podman.io/storage/drivers"
	"go.podman.io/storage/pkg/archive"
	"go.podman.io/storage/pkg/idtools"
	"golang.org/x/sys/unix"
)

// Streaming layers: a layer blob is extracted while it downloads, into a
// staging directory of the overlay driver (its Differ interface, the one
// partial pulls use), and becomes a layer only once its compressed digest,
// size and DiffID are verified at the end of the stream. Staging needs no
// parent, so the layers of an image download and extract concurrently;
// they are committed in order.

// canStage reports whether layers can be streamed into staging
// directories: the overlay driver (native or fuse-overlayfs) and openat2.
func (s *Store) canStage() bool {
	s.stageOnce.Do(func() {
		d, err := s.cs.GraphDriver()
		if err != nil {
			return
		}
		_, ok := d.(graphdriver.DriverWithDiffer)
		s.stageOK = ok && d.String() == "overlay" && openat2Works()
	})
	return s.stageOK
}

// stageLayer downloads l's blob and extracts it into a staging directory.
// The caller commits or cleans up the result.
func (s *Store) stageLayer(ctx context.Context, src types.ImageSource, l *layerFetch, progress *pullProgress) (*graphdriver.DriverWithDifferOutput, error) {
	start := time.Now()
	blobCtx, cancel := context.WithCancel(ctx)
	rc, _, err := src.GetBlob(blobCtx, l.blob, none.NoCache)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("reading blob %s: %w", l.blob.Digest, err)
	}
	defer rc.Close()
	// After a failed extraction the decompressor may still be reading:
	// cancelling the request ends that read before the body is closed.
	defer cancel()
	body := &progressReader{r: rc, total: l.blob.Size, report: func(n int64) { progress.fetchRead(l.blob.Digest, n) }}
	d := &streamDiffer{blob: l.blob, diffID: l.diffID, body: body, log: s.log}
	out, err := s.cs.PrepareStagedLayer(nil, d)
	if err != nil {
		if out != nil && out.Target != "" {
			if cerr := s.cs.CleanupStagedLayer(out); cerr != nil {
				s.log.Warn("storage: cannot remove a staged layer", "dir", out.Target, "err", cerr)
			}
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("applying layer %s: %w", l.blob.Digest, err)
	}
	progress.fetched(l.blob.Digest)
	s.log.Debug("storage: layer streamed", "blob", l.blob.Digest, "bytes", out.Size, "duration", time.Since(start))
	return out, nil
}

// streamDiffer is the graphdriver.Differ of one layer blob.
type streamDiffer struct {
	blob   types.BlobInfo
	diffID digest.Digest
	body   io.Reader // the compressed blob as it downloads
	log    *slog.Logger
}

func (d *streamDiffer) Close() error { return nil }

// ApplyDiff extracts the blob into dest and verifies it; the tar-split
// metadata goes to an unnamed file in the staging directory.
func (d *streamDiffer) ApplyDiff(dest string, options *archive.TarOptions, differOpts *graphdriver.DifferOptions) (graphdriver.DriverWithDifferOutput, error) {
	var out graphdriver.DriverWithDifferOutput
	if differOpts == nil || differOpts.Format != graphdriver.DifferOutputFormatDir || options == nil || options.ForceMask != nil {
		return out, errors.New("storage: the driver asks for a layer layout hutch does not extract")
	}
	ts, err := os.CreateTemp(differOpts.StagingDirectory, "tar-split-")
	if err != nil {
		return out, err
	}
	os.Remove(ts.Name()) // kept open; the store reads it back
	res, size, err := d.extract(dest, options, ts)
	if err != nil {
		ts.Close()
		return out, err
	}
	out.Size = size
	out.UIDs, out.GIDs = res.uids, res.gids
	out.UncompressedDigest = d.diffID
	out.CompressedDigest = d.blob.Digest
	out.RootDirMode = res.rootMode
	out.TarSplit = ts
	return out, nil
}

func (d *streamDiffer) extract(dest string, options *archive.TarOptions, ts *os.File) (extractResult, int64, error) {
	if err := d.blob.Digest.Validate(); err != nil {
		return extractResult{}, 0, err
	}
	compressed := &countingReader{r: d.body, h: d.blob.Digest.Algorithm().Hash()}
	plain, err := decompressLayer(compressed)
	if err != nil {
		return extractResult{}, 0, fmt.Errorf("reading blob %s: %w", d.blob.Digest, err)
	}
	res, err := extractStaged(plain, dest, options, ts, d.log)
	// Closing (once: pgzip returns a buffer to a pool) waits for the
	// decompressor's read of the blob to end (pgzip's read-ahead, the copy
	// into igzip). After a failed extraction that read may be waiting on
	// the registry until stageLayer cancels it.
	if err != nil {
		go plain.Close()
		return extractResult{}, 0, err
	}
	plain.Close()
	// The whole blob counts, whatever follows the compressed stream.
	if _, err := io.Copy(io.Discard, compressed); err != nil {
		return extractResult{}, 0, fmt.Errorf("reading blob %s: %w", d.blob.Digest, err)
	}
	switch {
	case d.blob.Size >= 0 && compressed.n != d.blob.Size:
		return extractResult{}, 0, fmt.Errorf("blob %s: read %d bytes, manifest says %d", d.blob.Digest, compressed.n, d.blob.Size)
	case digest.NewDigest(d.blob.Digest.Algorithm(), compressed.h) != d.blob.Digest:
		return extractResult{}, 0, fmt.Errorf("blob %s: content does not match its digest", d.blob.Digest)
	}
	if res.diffID != d.diffID {
		return extractResult{}, 0, fmt.Errorf("layer %s has content %s, the image config says %s: layers from manifest don't match image configuration",
			d.blob.Digest, res.diffID, d.diffID)
	}
	return res, res.size, nil
}

// extractStaged extracts the tar plain into a staging directory dest as
// the driver's options ask, its tar-split metadata written to ts.
func extractStaged(plain io.Reader, dest string, options *archive.TarOptions, ts *os.File, log *slog.Logger) (extractResult, error) {
	tsw := bufio.NewWriterSize(ts, 256<<10)
	res, err := extractLayer(plain, dest, extractOptions{
		idMappings:        idMappingsOf(options),
		ignoreChownErrors: options.IgnoreChownErrors,
		overlayWhiteouts:  options.WhiteoutFormat == archive.OverlayWhiteoutFormat,
		opaqueXattr:       archive.GetOverlayXattrName("opaque"),
		inUserNS:          options.InUserNS,
		log:               log,
	}, storage.NewJSONPacker(tsw))
	if err != nil {
		return res, err
	}
	return res, tsw.Flush()
}

func idMappingsOf(o *archive.TarOptions) *idtools.IDMappings {
	return idtools.NewIDMappingsFromMaps(o.UIDMaps, o.GIDMaps)
}

// countingReader hashes and counts what is read through it.
type countingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.h.Write(b[:n])
	return n, err
}

// pruneStaging removes staging directories a killed daemon left behind;
// the driver only prunes them at a clean shutdown. Open calls it before
// the store is in use: one daemon owns a graph root.
func pruneStaging(graphRoot string) error {
	err := os.RemoveAll(graphRoot + "/overlay/staging")
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
