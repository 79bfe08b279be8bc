package storage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/storage/pkg/archive"

	"github.com/hutch-engine/hutch/engine/imagestore"

	cstorage "go.podman.io/storage"
)

// `docker save` writes the archive Docker writes since 25.0: an OCI image
// layout (oci-layout, index.json, and every manifest, config and layer in
// blobs/sha256/) that OCI tools and containerd read, with Docker's
// manifest.json and repositories beside it, naming the same blobs, for
// every docker load. The layers are the uncompressed diffs, named by
// their diff IDs; every entry is dated 1970, so that saving the same
// images gives the same bytes.

// saveManifestItem is one image of manifest.json, as Docker writes it.
type saveManifestItem struct {
	Config   string
	RepoTags []string
	Layers   []string
	Parent   string `json:",omitempty"`
}

// saveBlob is one file of blobs/sha256/: bytes held in memory (configs,
// manifests), or a layer's diff spooled to a file.
type saveBlob struct {
	digest digest.Digest
	size   int64
	data   []byte
	spool  string // a file holding the diff
}

// SaveImages writes images to w as Docker's archive. Everything, the
// layers' diffs spooled to files, is gathered before the first byte; a
// failure after it leaves w with a truncated archive, which the caller
// must not pass off as complete.
func (s *Store) SaveImages(ctx context.Context, images []imagestore.SaveImage, w io.Writer) error {
	plan, err := s.planSave(ctx, images)
	defer plan.cleanup()
	if err != nil {
		return err
	}
	return plan.write(ctx, w)
}

// savePlan is what an archive holds.
type savePlan struct {
	blobs        map[digest.Digest]*saveBlob
	index        ocispec.Index
	manifest     []saveManifestItem
	repositories map[string]map[string]string
	spools       []string
}

func (p *savePlan) cleanup() {
	for _, f := range p.spools {
		os.Remove(f)
	}
}

func (p *savePlan) add(b *saveBlob) {
	if _, ok := p.blobs[b.digest]; !ok {
		p.blobs[b.digest] = b
	}
}

// planSave gathers the images' configs and layers and makes their
// manifests and the archive's metadata.
func (s *Store) planSave(ctx context.Context, images []imagestore.SaveImage) (*savePlan, error) {
	p := &savePlan{
		blobs:        map[digest.Digest]*saveBlob{},
		index:        ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}},
		repositories: map[string]map[string]string{},
	}
	saved := map[string]bool{}
	for _, img := range images {
		saved[img.ID] = true
	}
	for _, img := range images {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		if err := s.planImage(p, img, saved); err != nil {
			return p, fmt.Errorf("saving image %s: %w", img.ID, err)
		}
	}
	return p, nil
}

func (s *Store) planImage(p *savePlan, img imagestore.SaveImage, saved map[string]bool) error {
	simg, err := s.byID(img.ID)
	if err != nil {
		return err
	}
	if isIndex(simg) {
		return s.planIndex(p, img, simg)
	}
	desc, item, top, err := s.planManifest(p, simg)
	if err != nil {
		return err
	}
	if parent := s.meta(simg).Parent; parent != "" && saved[parent] {
		item.Parent = parent
	}
	return p.name(desc, item, top, img.Names)
}

// planManifest adds image simg's config, layers and manifest (the one
// that gives it its ID) to p; it returns the manifest's descriptor, its
// manifest.json item and its top layer's digest ("" for none).
func (s *Store) planManifest(p *savePlan, simg *cstorage.Image) (ocispec.Descriptor, saveManifestItem, digest.Digest, error) {
	var desc ocispec.Descriptor
	var item saveManifestItem
	config, err := s.configBlob(simg)
	if err != nil {
		return desc, item, "", err
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(config, &cfg); err != nil {
		return desc, item, "", fmt.Errorf("parsing its config: %w", err)
	}
	configDigest := digest.FromBytes(config)
	p.add(&saveBlob{digest: configDigest, size: int64(len(config)), data: config})

	layers, err := s.saveLayers(p, simg, cfg.RootFS.DiffIDs)
	if err != nil {
		return desc, item, "", err
	}
	item.Config = blobPath(configDigest)
	descs := make([]ocispec.Descriptor, 0, len(layers))
	for _, l := range layers {
		descs = append(descs, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: l.digest, Size: l.size})
		item.Layers = append(item.Layers, blobPath(l.digest))
	}
	// The manifest that gives the image its ID (idOf makes it the same way).
	mb, err := ociManifest(config, descs)
	if err != nil {
		return desc, item, "", err
	}
	desc = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(mb), Size: int64(len(mb))}
	p.add(&saveBlob{digest: desc.Digest, size: desc.Size, data: mb})
	var top digest.Digest
	if len(layers) > 0 {
		top = layers[len(layers)-1].digest
	}
	return desc, item, top, nil
}

// planIndex adds multi-platform image simg with the platforms img asks
// for (all available ones when none): each platform's image, and an
// index of them that the names go to. manifest.json lists the host's
// platform's image (else the first), for loaders that read only it.
func (s *Store) planIndex(p *savePlan, img imagestore.SaveImage, simg *cstorage.Image) error {
	insts, err := s.instances(simg)
	if err != nil {
		return err
	}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	var chosen []instance
	for _, in := range insts {
		if in.img != nil && platformWanted(*in.desc.Platform, img.Platforms) {
			chosen = append(chosen, in)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("no suitable export target found%.0w", errdefs.ErrNotFound)
	}
	host := chosen[pick(chosen, nil)]
	var hostItem saveManifestItem
	var hostTop digest.Digest
	for _, in := range chosen {
		desc, item, top, err := s.planManifest(p, in.img)
		if err != nil {
			return err
		}
		desc.Platform = in.desc.Platform
		idx.Manifests = append(idx.Manifests, desc)
		if in.img == host.img {
			hostItem, hostTop = item, top
		}
	}
	ib, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(ib), Size: int64(len(ib))}
	p.add(&saveBlob{digest: desc.Digest, size: desc.Size, data: ib})
	return p.name(desc, hostItem, hostTop, img.Names)
}

// platformWanted reports whether an image of platform got is among want
// (containerd's strict matching); every platform is when want is empty.
func platformWanted(got ocispec.Platform, want []ocispec.Platform) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if platforms.OnlyStrict(w).Match(got) {
			return true
		}
	}
	return false
}

// name adds the image whose manifest or index is desc to index.json, once
// per name (with Docker's and OCI's annotations) or once unnamed, and
// its item to manifest.json with the names as RepoTags and repositories.
func (p *savePlan) name(desc ocispec.Descriptor, item saveManifestItem, top digest.Digest, names []string) error {
	for _, n := range names {
		named, err := reference.ParseNormalizedNamed(n)
		if err != nil {
			return invalidReference(err)
		}
		tagged, ok := named.(reference.NamedTagged)
		if !ok {
			return fmt.Errorf("%q is not a tagged name%.0w", n, errdefs.ErrInvalidArgument)
		}
		// Docker names a manifest for containerd and OCI tools with
		// annotations; RepoTags and repositories for docker load.
		d := desc
		d.Annotations = map[string]string{"io.containerd.image.name": tagged.String(), ocispec.AnnotationRefName: tagged.Tag()}
		p.index.Manifests = append(p.index.Manifests, d)
		item.RepoTags = append(item.RepoTags, reference.FamiliarString(tagged))
		if top != "" {
			repo := reference.FamiliarName(tagged)
			if p.repositories[repo] == nil {
				p.repositories[repo] = map[string]string{}
			}
			p.repositories[repo][tagged.Tag()] = top.Encoded()
		}
	}
	if len(names) == 0 {
		p.index.Manifests = append(p.index.Manifests, desc)
	}
	p.manifest = append(p.manifest, item)
	return nil
}

// imageLayers lists img's layers, bottom first, checked against the
// config's diffIDs: as many.
func (s *Store) imageLayers(img *cstorage.Image, diffIDs []digest.Digest) ([]*cstorage.Layer, error) {
	var chain []*cstorage.Layer
	for id := img.TopLayer; id != ""; {
		l, err := s.cs.Layer(id)
		if err != nil {
			return nil, fmt.Errorf("reading layer %s: %w", id, err)
		}
		chain = append(chain, l)
		id = l.Parent
	}
	slices.Reverse(chain)
	if len(chain) != len(diffIDs) {
		return nil, fmt.Errorf("its config lists %d layers, the store holds %d", len(diffIDs), len(chain))
	}
	return chain, nil
}

// saveLayers lists the image's layers, bottom first, as blobs named by
// the config's diff IDs. A layer whose size or digest the store does not
// know is spooled to a file to learn them.
func (s *Store) saveLayers(p *savePlan, img *cstorage.Image, diffIDs []digest.Digest) ([]*saveBlob, error) {
	chain, err := s.imageLayers(img, diffIDs)
	if err != nil {
		return nil, err
	}
	// Every diff is spooled before the first byte goes out, as Docker's
	// export fills a temporary directory first: a client may remove the
	// image before it reads the archive, and a diff read from the store
	// holds the store's lock for as long as the client leaves it unread.
	out := make([]*saveBlob, len(chain))
	for i, l := range chain {
		if known := p.blobs[diffIDs[i]]; known != nil {
			out[i] = known
			continue
		}
		f, d, n, err := s.spoolDiff(l.ID)
		if err != nil {
			return nil, err
		}
		p.spools = append(p.spools, f)
		if d != diffIDs[i] {
			return nil, fmt.Errorf("layer %s is %s, its config says %s", l.ID, d, diffIDs[i])
		}
		b := &saveBlob{digest: diffIDs[i], size: n, spool: f}
		p.add(b)
		out[i] = b
	}
	return out, nil
}

// spoolDiff writes the diff of layer id to a file of the store's
// temporary directory and returns it with its digest and size.
func (s *Store) spoolDiff(id string) (string, digest.Digest, int64, error) {
	f, err := os.CreateTemp(s.tmpDir, "save-")
	if err != nil {
		return "", "", 0, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	rc, err := s.layerDiff(id)
	if err != nil {
		os.Remove(f.Name())
		return "", "", 0, err
	}
	digester := digest.Canonical.Digester()
	n, err := io.Copy(io.MultiWriter(f, digester.Hash()), rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", "", 0, fmt.Errorf("reading layer %s: %w", id, err)
	}
	return f.Name(), digester.Digest(), n, nil
}

// layerDiff is the uncompressed diff of layer id against its parent: the
// tar it was stored from, when the store kept its tar-split.
func (s *Store) layerDiff(id string) (io.ReadCloser, error) {
	uncompressed := archive.Uncompressed
	rc, err := s.cs.Diff("", id, &cstorage.DiffOptions{Compression: &uncompressed})
	if err != nil {
		return nil, fmt.Errorf("reading layer %s: %w", id, classify(err))
	}
	return rc, nil
}

func blobPath(d digest.Digest) string {
	return ocispec.ImageBlobsDir + "/" + d.Algorithm().String() + "/" + d.Encoded()
}

// saveTime dates every entry of the archive.
var saveTime = time.Unix(0, 0)

// write writes the archive: the blob directories, the blobs in the order
// of their digests, then the metadata files, as Docker's tar of its
// export directory lists them.
func (p *savePlan) write(ctx context.Context, w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, dir := range []string{ocispec.ImageBlobsDir + "/", ocispec.ImageBlobsDir + "/" + digest.Canonical.String() + "/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: saveTime}); err != nil {
			return fmt.Errorf("writing the archive: %w", err)
		}
	}
	keys := slices.Sorted(func(yield func(digest.Digest) bool) {
		for d := range p.blobs {
			if !yield(d) {
				return
			}
		}
	})
	for _, d := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.blobs[d].write(tw); err != nil {
			return err
		}
	}
	index, err := json.Marshal(p.index)
	if err != nil {
		return err
	}
	var manifest bytes.Buffer
	if err := json.NewEncoder(&manifest).Encode(p.manifest); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageIndexFile, index},
		{"manifest.json", manifest.Bytes()},
		{ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion": "` + ocispec.ImageLayoutVersion + `"}`)},
	}
	if len(p.repositories) > 0 {
		var repos bytes.Buffer
		if err := json.NewEncoder(&repos).Encode(p.repositories); err != nil {
			return err
		}
		files = append(files, struct {
			name string
			data []byte
		}{"repositories", repos.Bytes()})
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, int64(len(f.data)), bytes.NewReader(f.data)); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	return nil
}

// write writes the blob: bytes held in memory, or a spooled diff.
func (b *saveBlob) write(tw *tar.Writer) error {
	name := blobPath(b.digest)
	if b.data != nil {
		return writeFile(tw, name, b.size, bytes.NewReader(b.data))
	}
	f, err := os.Open(b.spool)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	return writeFile(tw, name, b.size, f)
}

// writeFile writes a regular file of exactly size bytes read from r: a
// layer diff longer or shorter than the store recorded fails the save.
func writeFile(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: saveTime}); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}
	n, err := io.Copy(tw, r)
	switch {
	case errors.Is(err, tar.ErrWriteTooLong):
		return fmt.Errorf("storage: %s is longer than its %d bytes", name, size)
	case err != nil:
		return fmt.Errorf("writing %s to the archive: %w", name, err)
	case n < size:
		return fmt.Errorf("storage: %s ends after %d of its %d bytes", name, n, size)
	}
	return nil
}
