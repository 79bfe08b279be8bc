package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
	graphdriver "go.podman.io/storage/drivers"
	"go.podman.io/storage/pkg/archive"
)

// Layers that copy.Image, import and commit hand to PutLayer (docker load,
// BuildKit's results, docker import, docker commit and the classic
// builder's steps) take the pull's road where it is open: extracted in
// this process into a staging directory of the overlay driver, then
// committed. The library's PutLayer re-executes the engine's binary for
// every layer (storage-applyLayer), a start of the whole engine each time.

// putStaged makes layer id on parent from diff (a tar, compressed or
// not) as PutLayer would, checking the digests opts names. handled is
// false where staging is not open (the caller calls PutLayer).
func (s *Store) putStaged(id, parent string, opts *cstorage.LayerOptions, diff io.Reader) (layer *cstorage.Layer, size int64, handled bool, err error) {
	if id == "" || !s.canStage() {
		return nil, 0, false, nil
	}
	d := &plainDiffer{body: diff, log: s.log}
	if opts != nil {
		d.digest, d.diffID = opts.OriginalDigest, opts.UncompressedDigest
	}
	out, err := s.cs.PrepareStagedLayer(nil, d)
	cleanup := func() {
		if out != nil && out.Target != "" {
			if cerr := s.cs.CleanupStagedLayer(out); cerr != nil {
				s.log.Warn("storage: cannot remove a staged layer", "dir", out.Target, "err", cerr)
			}
		}
	}
	if err != nil {
		cleanup()
		return nil, 0, true, err
	}
	if out.RootDirMode == nil && parent != "" {
		if err := s.inheritRootOwner(parent, out.Target); err != nil {
			cleanup()
			return nil, 0, true, err
		}
	}
	layer, err = s.cs.ApplyStagedLayer(cstorage.ApplyStagedLayerOptions{
		ID:          id,
		ParentLayer: parent,
		DiffOutput:  out,
		DiffOptions: &graphdriver.ApplyDiffWithDifferOpts{},
	})
	if err != nil {
		cleanup()
		return nil, 0, true, err
	}
	if err := os.Remove(filepath.Dir(out.Target)); err != nil {
		s.log.Debug("storage: staging directory kept", "dir", filepath.Dir(out.Target), "err", err)
	}
	return layer, out.Size, true, nil
}

// plainDiffer is the graphdriver.Differ of a layer handed to PutLayer:
// the stream is read once, its digest and its diff ID computed on the way
// and checked against those given.
type plainDiffer struct {
	body   io.Reader
	digest digest.Digest // of the stream as given; "" unchecked
	diffID digest.Digest // of the tar; "" unchecked
	log    *slog.Logger
}

func (d *plainDiffer) Close() error { return nil }

func (d *plainDiffer) ApplyDiff(dest string, options *archive.TarOptions, differOpts *graphdriver.DifferOptions) (graphdriver.DriverWithDifferOutput, error) {
	var out graphdriver.DriverWithDifferOutput
	if differOpts == nil || differOpts.Format != graphdriver.DifferOutputFormatDir || options == nil || options.ForceMask != nil {
		return out, errors.New("storage: the driver asks for a layer layout hutch does not extract")
	}
	algo := digest.Canonical
	if d.digest != "" {
		if err := d.digest.Validate(); err != nil {
			return out, err
		}
		algo = d.digest.Algorithm()
	}
	ts, err := os.CreateTemp(differOpts.StagingDirectory, "tar-split-")
	if err != nil {
		return out, err
	}
	os.Remove(ts.Name()) // kept open; the store reads it back
	raw := &countingReader{r: d.body, h: algo.Hash()}
	plain, err := decompressLayer(raw)
	if err != nil {
		ts.Close()
		return out, err
	}
	res, err := extractStaged(plain, dest, options, ts, d.log)
	if err != nil {
		go plain.Close()
		ts.Close()
		return out, err
	}
	plain.Close()
	_, err = io.Copy(io.Discard, raw)
	got := digest.NewDigest(algo, raw.h)
	switch {
	case err != nil:
	case d.digest != "" && got != d.digest:
		err = fmt.Errorf("layer %s: content does not match its digest (%s)", d.digest, got)
	case d.diffID != "" && res.diffID != d.diffID:
		err = fmt.Errorf("layer has content %s, expected %s", res.diffID, d.diffID)
	}
	if err != nil {
		ts.Close()
		return out, err
	}
	out.Size = res.size
	out.UIDs, out.GIDs = res.uids, res.gids
	out.UncompressedDigest = res.diffID
	out.CompressedDigest = got
	out.RootDirMode = res.rootMode
	out.TarSplit = ts
	return out, nil
}
