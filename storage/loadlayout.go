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
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/oci/layout"
	"go.podman.io/image/v5/types"
	cstorage "go.podman.io/storage"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// A `docker load` archive whose index.json names an image index, or that
// has no manifest.json, is read as the OCI image layout it is, as Docker's
// containerd image store reads it: each entry of index.json is an image,
// named by its io.containerd.image.name annotation; an index becomes a
// multi-platform image (indeximage.go) with each platform whose content
// the archive holds.

// layoutNameKey is the annotation Docker and containerd name an image of
// an OCI layout with.
const layoutNameKey = "io.containerd.image.name"

// layoutEntries reads an archive's index.json, and whether it is to be
// loaded as an OCI layout: it names an index, or manifest.json is absent.
func layoutEntries(archivePath string) (*ocispec.Index, bool, error) {
	f, err := os.Open(archivePath)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var idx *ocispec.Index
	legacy := false
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, nil // not a tar: the docker-archive reader says so
		}
		switch path.Clean(hdr.Name) {
		case "manifest.json":
			legacy = true
		case "index.json":
			var i ocispec.Index
			if err := json.NewDecoder(io.LimitReader(tr, 16<<20)).Decode(&i); err != nil {
				return nil, false, invalidArchive(fmt.Errorf("index.json: %w", err))
			}
			idx = &i
		}
	}
	if idx == nil {
		return nil, false, nil
	}
	for _, d := range idx.Manifests {
		if manifest.MIMETypeIsMultiImage(d.MediaType) {
			return idx, true, nil
		}
	}
	return idx, !legacy, nil
}

// unpackLayout writes the archive's index.json, oci-layout and blobs into
// dir, which is new and empty; other entries are left out. Names are
// checked, so nothing is written outside dir.
func unpackLayout(archivePath, dir string) error {
	f, err := os.Open(archivePath)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return invalidArchive(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(hdr.Name)
		switch {
		case name == "index.json" || name == "oci-layout":
		case strings.HasPrefix(name, "blobs/sha256/"):
			if digest.NewDigestFromEncoded(digest.SHA256, strings.TrimPrefix(name, "blobs/sha256/")).Validate() != nil {
				continue
			}
		default:
			continue
		}
		out, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return invalidArchive(err)
		}
	}
}

// loadLayout loads the images of the OCI layout archive at archivePath,
// whose index.json is idx.
func (s *Store) loadLayout(ctx context.Context, sys *types.SystemContext, archivePath string, idx *ocispec.Index, opts imagestore.LoadOptions) ([]imagestore.LoadedImage, error) {
	dir, err := os.MkdirTemp(s.tmpDir, "layout-")
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := unpackLayout(archivePath, dir); err != nil {
		return nil, err
	}
	l := &layoutLoad{s: s, sys: sys, dir: dir, opts: opts}
	var out []imagestore.LoadedImage
	for i, d := range idx.Manifests {
		li, err := l.entry(ctx, i, d)
		if err != nil {
			return out, err
		}
		if li.ID != "" {
			out = append(out, li)
		}
	}
	return out, nil
}

type layoutLoad struct {
	s    *Store
	sys  *types.SystemContext
	dir  string
	opts imagestore.LoadOptions
}

func (l *layoutLoad) blob(d digest.Digest) ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, invalidArchive(err)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, "blobs", d.Algorithm().String(), d.Encoded()))
	if err != nil {
		return nil, invalidArchive(fmt.Errorf("blob %s: %w", d, os.ErrNotExist))
	}
	if digest.FromBytes(b) != d {
		return nil, invalidArchive(fmt.Errorf("blob %s does not match its digest", d))
	}
	return b, nil
}

// has reports whether the layout holds blob d.
func (l *layoutLoad) has(d digest.Digest) bool {
	if d.Validate() != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(l.dir, "blobs", d.Algorithm().String(), d.Encoded()))
	return err == nil
}

// entry loads index.json's entry i.
func (l *layoutLoad) entry(ctx context.Context, i int, d ocispec.Descriptor) (imagestore.LoadedImage, error) {
	var names []string
	if n := d.Annotations[layoutNameKey]; n != "" {
		named, err := imageName("load", n)
		if err != nil {
			return imagestore.LoadedImage{}, invalidArchive(err)
		}
		names = append(names, named.String())
	}
	if !manifest.MIMETypeIsMultiImage(d.MediaType) {
		img, _, err := l.instance(ctx, i, d.Digest, d.Platform)
		if err != nil || img == nil {
			return imagestore.LoadedImage{}, err
		}
		return l.s.nameLoaded(img, names)
	}
	b, err := l.blob(d.Digest)
	if err != nil {
		return imagestore.LoadedImage{}, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return imagestore.LoadedImage{}, invalidArchive(fmt.Errorf("index %s: %w", d.Digest, err))
	}
	// An index that fails leaves none of its platforms' images that the
	// load made.
	var made []string
	undo := func() {
		for _, id := range made {
			if _, err := l.s.deleteImage(id); err != nil {
				l.s.log.Warn("storage: removing a failed load's image", "image", id, "err", err)
			}
		}
	}
	loaded := 0
	var unpack error
	for _, m := range idx.Manifests {
		if m.Annotations[attestationType] != "" || manifest.MIMETypeIsMultiImage(m.MediaType) || !l.has(m.Digest) {
			continue
		}
		img, fresh, err := l.instance(ctx, i, m.Digest, m.Platform)
		if err != nil && l.unpackOnly(err, m.Digest) {
			unpack = errors.Join(unpack, err)
			continue
		}
		if err != nil {
			undo()
			return imagestore.LoadedImage{}, err
		}
		if img != nil {
			loaded++
			if fresh {
				made = append(made, img.ID)
			}
		}
	}
	if loaded == 0 && unpack == nil {
		return imagestore.LoadedImage{}, nil
	}
	img, err := l.s.putIndex(d.Digest, b, l.attestations(idx))
	if err != nil {
		undo()
		return imagestore.LoadedImage{}, err
	}
	li, err := l.s.nameLoaded(img, names)
	li.Unpack = unpack
	return li, err
}

// attestations are the blobs of idx's attestation manifests that the
// layout holds: the manifests and their layers (the statements).
func (l *layoutLoad) attestations(idx ocispec.Index) map[digest.Digest][]byte {
	out := map[digest.Digest][]byte{}
	for _, m := range idx.Manifests {
		if m.Annotations[attestationType] == "" {
			continue
		}
		b, err := l.blob(m.Digest)
		if err != nil {
			continue
		}
		var man ocispec.Manifest
		if json.Unmarshal(b, &man) != nil {
			continue
		}
		out[m.Digest] = b
		for _, layer := range man.Layers {
			if lb, err := l.blob(layer.Digest); err == nil && len(lb) <= 4<<20 {
				out[layer.Digest] = lb
			}
		}
	}
	return out
}

// instance copies the image whose manifest is d into the store, unless
// opts.Match leaves its platform out (nil, false, nil); fresh tells
// whether the store lacked it.
func (l *layoutLoad) instance(ctx context.Context, i int, d digest.Digest, p *ocispec.Platform) (img *cstorage.Image, fresh bool, err error) {
	mb, err := l.blob(d)
	if err != nil {
		return nil, false, err
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(mb, &man); err != nil {
		return nil, false, invalidArchive(fmt.Errorf("manifest %s: %w", d, err))
	}
	cb, err := l.blob(man.Config.Digest)
	if err != nil {
		return nil, false, err
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(cb, &cfg); err != nil {
		return nil, false, invalidArchive(fmt.Errorf("config %s: %w", man.Config.Digest, err))
	}
	if l.opts.Match != nil {
		plat := ocispec.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		if p != nil && p.OS != "" {
			plat = *p
		}
		if !l.opts.Match(plat) {
			return nil, false, nil
		}
	}
	ref, err := layout.NewIndexReference(l.dir, i)
	if err != nil {
		return nil, false, invalidArchive(err)
	}
	inner, err := ref.NewImageSource(ctx, l.sys)
	if err != nil {
		return nil, false, invalidArchive(err)
	}
	src := &openedSource{ImageReference: ref, src: &instanceSource{ImageSource: inner, instance: d}}
	var report func(types.ProgressProperties)
	if l.opts.Progress != nil {
		report = loadingLayer(cfg.RootFS.DiffIDs, l.opts.Progress)
	}
	id := man.Config.Digest.Encoded()
	_, errBefore := l.s.cs.Image(id)
	if err := l.s.copyIntoReporting(ctx, l.sys, src, nil, id, nil, report); err != nil {
		return nil, false, fmt.Errorf("loading image %s: %w", d, archiveContentError(err))
	}
	if img, err = l.s.cs.Image(id); err != nil {
		return nil, false, fmt.Errorf("storage: loaded image %s: %w", id, classify(err))
	}
	return img, errBefore != nil, nil
}

// instanceSource is an image source whose own manifest is one instance of
// the index it reads.
type instanceSource struct {
	types.ImageSource
	instance digest.Digest
}

func (s *instanceSource) GetManifest(ctx context.Context, d *digest.Digest) ([]byte, string, error) {
	if d == nil {
		d = &s.instance
	}
	return s.ImageSource.GetManifest(ctx, d)
}

// putIndex stores index image index (its digest d), keeping blobs beside
// it, or finds it stored.
func (s *Store) putIndex(d digest.Digest, index []byte, blobs map[digest.Digest][]byte) (*cstorage.Image, error) {
	if img, err := s.cs.Image(d.Encoded()); err == nil && isIndex(img) {
		return img, nil
	}
	opts := &cstorage.ImageOptions{BigData: []cstorage.ImageBigDataOption{{Key: indexKey, Data: index}}}
	for bd, b := range blobs {
		opts.BigData = append(opts.BigData, cstorage.ImageBigDataOption{Key: blobKey(bd), Data: b})
	}
	img, err := s.cs.CreateImage(d.Encoded(), nil, "", "", opts)
	if err != nil {
		return nil, fmt.Errorf("storage: storing index %s: %w", d, classify(err))
	}
	return img, nil
}

// blobKey names the big-data item of an index image holding blob d (the
// attestations an index names).
func blobKey(d digest.Digest) string { return "hutch-blob-" + d.String() }

// nameLoaded gives a loaded image its names and describes it.
func (s *Store) nameLoaded(img *cstorage.Image, names []string) (imagestore.LoadedImage, error) {
	li := imagestore.LoadedImage{ID: s.idOf(img), Names: names, Replaced: map[string]string{}}
	for _, n := range names {
		if other, err := s.cs.Image(n); err == nil && other.ID != img.ID {
			li.Replaced[n] = s.idOf(other)
		}
	}
	if len(names) > 0 {
		if err := s.cs.AddNames(img.ID, names); err != nil {
			return li, fmt.Errorf("storage: naming loaded image %s: %w", img.ID, err)
		}
	}
	return li, nil
}
