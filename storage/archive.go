package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/docker/archive"
	"go.podman.io/image/v5/types"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// `docker load` goes through containers/image's docker-archive transport,
// which reads both the legacy layout and the OCI-based one Docker writes
// since 25.0 (save.go writes it).

// LoadImages stores the images of a docker-archive read from r. The archive
// is spooled to a file first: the format needs random access. An archive
// the transport cannot read is errdefs.ErrInvalidArgument.
func (s *Store) LoadImages(ctx context.Context, r io.Reader, opts imagestore.LoadOptions) ([]imagestore.LoadedImage, error) {
	f, err := os.CreateTemp(s.tmpDir, "load-")
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading the archive: %w", err)
	}
	sys, err := s.systemContext(ctx, "", PullOptions{})
	if err != nil {
		return nil, err
	}
	idx, isLayout, err := layoutEntries(f.Name())
	if err != nil {
		return nil, err
	}
	if isLayout {
		return s.loadLayout(ctx, sys, f.Name(), idx, opts)
	}
	reader, err := archive.NewReader(sys, f.Name())
	if err != nil {
		return nil, invalidArchive(err)
	}
	defer reader.Close()
	list, err := reader.List()
	if err != nil {
		return nil, invalidArchive(err)
	}
	var out []imagestore.LoadedImage
	for _, refs := range list {
		li, err := s.loadOne(ctx, sys, refs, opts)
		if err != nil {
			return out, err
		}
		if li.ID != "" {
			out = append(out, li)
		}
	}
	return out, nil
}

// machineErrnos are the failures of the machine, not of an archive:
// storing an archive's layers can meet them whatever the archive holds.
var machineErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE}

// machineError reports whether err is one of machineErrnos, as an error
// or in its text: the layer unpacker runs in a re-executed child that
// reports its errno as text only.
func machineError(err error) bool {
	msg := err.Error()
	for _, errno := range machineErrnos {
		if errors.Is(err, errno) || strings.Contains(msg, errno.Error()) {
			return true
		}
	}
	return false
}

// archiveContentError classes the failure to store what an import or load
// archive holds. The archive is the client's: a layer that does not apply
// (a hard link to nothing, an invalid whiteout, a duplicate path, a bad
// xattr), a component it lacks, a blob whose digest does not match are
// errdefs.ErrInvalidArgument. Failures of the machine stay unclassed, to
// be answered as server errors.
func archiveContentError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errdefs.ErrInvalidArgument) || machineError(err) {
		return err
	}
	return fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
}

// invalidArchive classes an error of reading the archive, which is the
// client's unless the machine failed (the transport spools a compressed
// archive to a file).
func invalidArchive(err error) error {
	if machineError(err) {
		return fmt.Errorf("reading the image archive: %w", err)
	}
	return fmt.Errorf("invalid image archive: %v%.0w", err, errdefs.ErrInvalidArgument)
}

// loadOne copies one image of the archive (refs are its tags, or one
// untagged reference) and gives it its names. An image opts.Match leaves
// out is not copied: its LoadedImage is the zero value.
func (s *Store) loadOne(ctx context.Context, sys *types.SystemContext, refs []types.ImageReference, opts imagestore.LoadOptions) (imagestore.LoadedImage, error) {
	src, err := refs[0].NewImage(ctx, sys)
	if err != nil {
		return imagestore.LoadedImage{}, invalidArchive(err)
	}
	cfg := src.ConfigInfo().Digest
	oci, err := src.OCIConfig(ctx)
	src.Close()
	if err != nil {
		return imagestore.LoadedImage{}, invalidArchive(err)
	}
	if cfg.Validate() != nil {
		return imagestore.LoadedImage{}, invalidArchive(fmt.Errorf("image without a valid config digest"))
	}
	if opts.Match != nil && !opts.Match(oci.Platform) {
		return imagestore.LoadedImage{}, nil
	}
	id := cfg.Encoded()
	var names []string
	for _, ref := range refs {
		if named := ref.DockerReference(); named != nil {
			if _, err := imageName("load", named.String()); err != nil {
				return imagestore.LoadedImage{}, invalidArchive(err)
			}
			names = append(names, named.String())
		}
	}
	var report func(types.ProgressProperties)
	if opts.Progress != nil {
		report = loadingLayer(oci.RootFS.DiffIDs, opts.Progress)
	}
	if err := s.copyIntoReporting(ctx, sys, refs[0], nil, id, nil, report); err != nil {
		return imagestore.LoadedImage{}, fmt.Errorf("loading image %s: %w", cfg, archiveContentError(err))
	}
	img, err := s.cs.Image(id)
	if err != nil {
		return imagestore.LoadedImage{}, fmt.Errorf("storage: loaded image %s: %w", id, classify(err))
	}
	return s.nameLoaded(img, names)
}

// loadingLayer turns the progress of a load's copy into Docker's
// "Loading layer" messages, one series per layer the load stores (layers
// already in the store are not loaded, and not reported, as in Docker),
// identified by the short form of the layer's diff ID.
func loadingLayer(diffIDs []digest.Digest, progress func(jsonstream.Message)) func(types.ProgressProperties) {
	return func(ev types.ProgressProperties) {
		if !slices.Contains(diffIDs, ev.Artifact.Digest) {
			return // the config
		}
		var current int64
		switch ev.Event {
		case types.ProgressEventRead:
			current = int64(ev.Offset)
		case types.ProgressEventDone:
			current = ev.Artifact.Size
			if current < 0 {
				current = int64(ev.Offset)
			}
		default:
			return
		}
		progress(jsonstream.Message{
			ID:       shortID(ev.Artifact.Digest),
			Status:   "Loading layer",
			Progress: &jsonstream.Progress{Current: current, Total: ev.Artifact.Size},
		})
	}
}
