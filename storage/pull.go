package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/copy"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/signature"
	istorage "go.podman.io/image/v5/storage"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"
)

// Pull fetches ref (a reference as NormalizeReference returns, or a short
// name: "busybox" is docker.io/library/busybox:latest) into the store and
// returns the image.
//
// progress receives Docker's pull stream messages, one call at a time. It is
// first called only once the manifest has been resolved, so an error
// returned before any call can still become a plain HTTP error (Docker
// answers 404 for a missing image, not a stream). Errors are classed:
// errdefs.ErrInvalidArgument for a bad reference or option, errdefs.ErrNotFound
// for a missing repository, tag or platform (with Docker's messages) and
// for a registry that refuses a pull without credentials (Docker's "pull
// access denied"), ErrUnauthorized (+ errdefs.ErrUnknown) for rejected
// credentials.
//
// A failed pull leaves no image record; layers it created are removed once
// no other pull is running (Docker releases a failed pull's layers too).
// Pulls of the same reference are serialised; the store's locks make other
// concurrent pulls safe.
func (s *Store) Pull(ctx context.Context, ref string, opts PullOptions, progress func(jsonstream.Message)) (*Image, error) {
	named, err := parsePullReference(ref)
	if err != nil {
		return nil, err
	}
	parallel := opts.MaxConcurrentDownloads
	if parallel <= 0 {
		parallel = DefaultMaxConcurrentDownloads
	}
	sys, err := s.systemContext(ctx, reference.Domain(named), opts)
	if err != nil {
		return nil, err
	}

	unlock, err := s.lockRef(ctx, named.String())
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.beginPull()
	var created []string
	ok := false
	defer func() {
		if !ok {
			s.endPull(created)
		} else {
			s.endPull(nil)
		}
	}()

	start := time.Now()
	hooked := &hookedStore{Store: s.cs, progress: newPullProgress(progress), locks: &s.layerLocks, stage: s.putStaged}
	// A decompressor's read-ahead may still report bytes read after a
	// failed layer: nothing reaches the caller's stream once Pull returns
	// (the API's response is finished by then; writing it crashed).
	defer hooked.progress.close()
	img, newer, err := s.pull(ctx, named, sys, parallel, hooked)
	created = hooked.createdLayers()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// Registry clients report a cancellation as a failed read.
			err = fmt.Errorf("pulling %s: %w", named, cerr)
		}
		if anonymous(opts.Auth) {
			err = anonymousPullError(err, named)
		}
		return nil, err
	}
	ok = true
	s.log.Debug("storage: pulled", "ref", named.String(), "id", img.ID, "newer", newer, "duration", time.Since(start))
	return img, nil
}

func (s *Store) pull(ctx context.Context, named reference.Named, sys *types.SystemContext, parallel int, hooked *hookedStore) (*Image, bool, error) {
	srcRef, err := docker.NewReference(named)
	if err != nil {
		return nil, false, invalidReference(err)
	}
	src, err := srcRef.NewImageSource(ctx, sys)
	if err != nil {
		return nil, false, classifyPullError(err, named)
	}
	defer src.Close() // copy.Image closes it too; closing twice is harmless
	top, topType, err := src.GetManifest(ctx, nil)
	if err != nil {
		return nil, false, classifyPullError(err, named)
	}
	topDigest, err := manifest.Digest(top)
	if err != nil {
		return nil, false, err
	}
	man, instDigest, err := resolveInstance(ctx, src, sys, named, top, topType)
	if err != nil {
		return nil, false, err
	}
	imageID := man.ConfigInfo().Digest.Encoded()
	// A list's name goes to the index image, with this platform's image
	// as one of its instances (indeximage.go).
	multi := manifest.MIMETypeIsMultiImage(topType)
	target := imageID
	if multi {
		target = topDigest.Encoded()
	}

	// Docker reports "up to date" when the name already pointed at the
	// image, and shows no layer at all when the image was already stored.
	_, errStored := s.cs.Image(imageID)
	stored := errStored == nil
	prior, errPrior := s.cs.Image(named.String())
	upToDate := errPrior == nil && prior.ID == target && stored
	if multi {
		// The platform's image must be the index's entry: an image of the
		// same config loaded from elsewhere lacks the entry's manifest,
		// which the copy adds.
		upToDate = upToDate && s.instanceImage(instDigest) != nil
	}
	var fetch []*layerFetch
	if !stored && !s.noFetcher {
		if fetch, err = s.planFetch(ctx, src, man); err != nil {
			return nil, false, classifyPullError(err, named)
		}
	}
	var planned []plannedLayer
	for _, l := range fetch {
		planned = append(planned, plannedLayer{digest: l.blob.Digest, size: l.blob.Size, exists: l.exists})
	}
	if fetch == nil {
		planned = s.planLayers(man)
	}
	hooked.progress.start(named, planned, parallel, stored)
	if upToDate && (multi || prior.Digest == topDigest || slices.Contains(prior.Digests, topDigest)) {
		// Nothing to copy, not even a name or manifest to record.
		img, err := s.recordedPull(target, named, topDigest)
		if err != nil {
			return nil, false, err
		}
		hooked.progress.finish(topDigest, named, false)
		return img, false, nil
	}
	if fetch != nil {
		if err := s.fetchLayers(ctx, src, fetch, parallel, hooked); err != nil {
			return nil, false, classifyPullError(err, named)
		}
	}

	destName, destID := named, ""
	if multi {
		destName, destID = nil, imageID
	}
	destRef, err := istorage.Transport.NewStoreReference(hooked, destName, destID)
	if err != nil {
		return nil, false, err
	}
	policy, err := signature.NewPolicyContext(&signature.Policy{
		Default: signature.PolicyRequirements{signature.NewPRInsecureAcceptAnything()},
	})
	if err != nil {
		return nil, false, err
	}
	defer policy.Destroy()

	events := make(chan types.ProgressProperties, 64)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for ev := range events {
			hooked.progress.event(ev)
		}
	}()
	_, err = copy.Image(ctx, policy, destRef, &openedSource{ImageReference: srcRef, src: src}, &copy.Options{
		SourceCtx:            sys,
		DestinationCtx:       sys,
		Progress:             events,
		ProgressInterval:     100 * time.Millisecond,
		MaxParallelDownloads: uint(parallel),
		PreferGzipInstances:  types.OptionalBoolTrue,
		RemoveSignatures:     true,
	})
	close(events)
	<-drained
	if err != nil {
		return nil, false, classifyPullError(err, named)
	}
	if multi {
		idx, err := s.putIndex(topDigest, top, nil)
		if err != nil {
			return nil, false, err
		}
		if err := s.cs.AddNames(idx.ID, []string{named.String()}); err != nil {
			return nil, false, fmt.Errorf("storage: naming %s: %w", named, classify(err))
		}
	}
	img, err := s.recordedPull(target, named, topDigest)
	if err != nil {
		return nil, false, err
	}
	hooked.progress.finish(topDigest, named, !upToDate)
	return img, !upToDate, nil
}

// recordedPull records the digest reference a pull of named resolved to
// (what Docker prints as "Digest:") and returns the image.
func (s *Store) recordedPull(imageID string, named reference.Named, d digest.Digest) (*Image, error) {
	if err := s.recordPull(imageID, named.Name(), d); err != nil {
		return nil, err
	}
	simg, err := s.cs.Image(imageID)
	if err != nil {
		return nil, fmt.Errorf("storage: pulled image %s not found after commit: %w", imageID, err)
	}
	return s.toImage(simg), nil
}

// resolveInstance returns the manifest of the image to pull and its
// digest: the manifest itself, or the instance of a list chosen for sys's
// platform exactly as copy.Image will choose it.
func resolveInstance(ctx context.Context, src types.ImageSource, sys *types.SystemContext, named reference.Named, blob []byte, mime string) (manifest.Manifest, digest.Digest, error) {
	if manifest.MIMETypeIsMultiImage(mime) {
		list, err := manifest.ListFromBlob(blob, mime)
		if err != nil {
			return nil, "", fmt.Errorf("parsing manifest list of %s: %w", named, err)
		}
		var d digest.Digest
		if c, ok := list.(interface {
			ChooseInstanceByCompression(*types.SystemContext, types.OptionalBool) (digest.Digest, error)
		}); ok {
			d, err = c.ChooseInstanceByCompression(sys, types.OptionalBoolTrue)
		} else {
			d, err = list.ChooseInstance(sys)
		}
		if err != nil {
			return nil, "", noMatchingManifest(sys.OSChoice, sys.ArchitectureChoice, sys.VariantChoice)
		}
		if blob, mime, err = src.GetManifest(ctx, &d); err != nil {
			return nil, "", classifyPullError(err, named)
		}
	}
	switch manifest.NormalizedMIMEType(mime) {
	case manifest.DockerV2Schema1MediaType, manifest.DockerV2Schema1SignedMediaType:
		return nil, "", schema1Error(named)
	}
	m, err := manifest.FromBlob(blob, mime)
	if err != nil {
		return nil, "", fmt.Errorf("parsing manifest of %s: %w", named, err)
	}
	return m, digest.FromBytes(blob), nil
}

// planLayers lists the layer blobs in order and marks the prefix already
// stored with the same parents: what containers/image will reuse.
func (s *Store) planLayers(m manifest.Manifest) []plannedLayer {
	var out []plannedLayer
	parent, chained := "", true
	for _, li := range m.LayerInfos() {
		if li.EmptyLayer {
			continue
		}
		p := plannedLayer{digest: li.Digest, size: li.Size}
		if chained {
			chained = false
			if layers, err := s.cs.LayersByCompressedDigest(li.Digest); err == nil {
				for _, l := range layers {
					if l.Parent == parent {
						p.exists, chained, parent = true, true, l.ID
						break
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// openedSource hands copy.Image the source Pull already opened, so that the
// manifest it resolved (and the registry round trips behind it) is the one
// copied, even if the tag moves meanwhile.
type openedSource struct {
	types.ImageReference
	src types.ImageSource
}

func (o *openedSource) NewImageSource(context.Context, *types.SystemContext) (types.ImageSource, error) {
	return o.src, nil
}

// lockRef serialises pulls of one reference: the second waits and then
// finds the image up to date instead of downloading it again. Waiting ends
// with ctx.
func (s *Store) lockRef(ctx context.Context, key string) (unlock func(), err error) {
	t := &s.pulls
	t.mu.Lock()
	l := t.refs[key]
	if l == nil {
		l = &refLock{held: make(chan struct{}, 1)}
		t.refs[key] = l
	}
	l.waiters++
	t.mu.Unlock()
	release := func() {
		t.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(t.refs, key)
		}
		t.mu.Unlock()
	}
	select {
	case l.held <- struct{}{}:
		return func() { <-l.held; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

func (s *Store) beginPull() {
	s.pulls.mu.Lock()
	s.pulls.active++
	s.pulls.mu.Unlock()
}

// endPull records the layers a failed pull created and, when no pull is
// running any more, deletes those no image or container uses. The deletion
// holds the tracker lock so no new pull can pick such a layer up meanwhile.
func (s *Store) endPull(orphans []string) {
	t := &s.pulls
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active--
	t.orphans = append(t.orphans, orphans...)
	if t.active > 0 || len(t.orphans) == 0 {
		return
	}
	for i := len(t.orphans) - 1; i >= 0; i-- { // children before parents
		id := t.orphans[i]
		if err := s.cs.DeleteLayer(id); err != nil && !errors.Is(err, cstorage.ErrLayerUnknown) {
			s.log.Debug("storage: keeping layer of a failed pull", "layer", id, "err", err)
		}
	}
	t.orphans = nil
}
