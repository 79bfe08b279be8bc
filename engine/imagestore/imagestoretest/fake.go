// Package imagestoretest is an in-memory imagestore.Store for the unit
// tests of the engine and its image service: images with names and
// layers, tags, lookups as the real store resolves references, deletion
// refused for images a rootfs uses. What it does not model (rootfs,
// registries, archives) answers errdefs.ErrNotImplemented; a test that
// needs one of those embeds Fake and adds the method.
package imagestoretest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// Fake is the in-memory store.
type Fake struct {
	Imgs  map[string]*imagestore.Image // by ID
	InUse map[string]bool              // IDs a rootfs uses: DeleteImage refuses them
	// Blobs are what IndexBlob answers: by image ID, the blobs it keeps
	// (a multi-platform image's index under its own ID's digest).
	Blobs map[string]map[digest.Digest][]byte
}

var _ imagestore.Store = (*Fake)(nil)

// New returns a store holding imgs.
func New(imgs ...*imagestore.Image) *Fake {
	f := &Fake{Imgs: map[string]*imagestore.Image{}, InUse: map[string]bool{}}
	for _, img := range imgs {
		f.Imgs[img.ID] = img
	}
	return f
}

// Image makes image number n with one layer of its own and refs.
func Image(n int, refs ...string) *imagestore.Image {
	d := digest.FromString(fmt.Sprint("layer", n))
	return &imagestore.Image{
		ID:     digest.FromString(fmt.Sprint("config", n)).String(),
		Refs:   refs,
		Layers: []imagestore.Layer{{ID: "L" + d.Encoded(), DiffID: d, Size: 100}},
	}
}

var errFake = errdefs.ErrNotImplemented.WithMessage("not in the fake image store")

func (f *Fake) ListImages(context.Context) ([]imagestore.Image, error) {
	var out []imagestore.Image
	for _, img := range f.Imgs {
		out = append(out, *img)
	}
	slices.SortFunc(out, func(a, b imagestore.Image) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// DeletePlatforms: the fake's images have one platform each.
func (f *Fake) DeletePlatforms(context.Context, string, []ocispec.Platform) ([]ocispec.Descriptor, error) {
	return nil, errdefs.ErrInvalidArgument.WithMessage("one platform")
}

// IndexBlob answers from Blobs.
func (f *Fake) IndexBlob(_ context.Context, id string, d digest.Digest) ([]byte, error) {
	if _, ok := f.Imgs[id]; !ok {
		return nil, errdefs.ErrNotFound.WithMessage("No such image: " + id)
	}
	if b, ok := f.Blobs[id][d]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("content digest %s: %w", d, errdefs.ErrNotFound)
}

// LookupImagePlatform is LookupImage: the fake keeps one platform per
// image.
func (f *Fake) LookupImagePlatform(ctx context.Context, ref string, _ *ocispec.Platform) (*imagestore.Image, error) {
	return f.LookupImage(ctx, ref)
}

func (f *Fake) LookupImage(_ context.Context, ref string) (*imagestore.Image, error) {
	if img, ok := f.Imgs[ref]; ok {
		c := *img
		return &c, nil
	}
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		want := reference.TagNameOnly(named).String()
		if _, ok := named.(reference.Canonical); ok {
			want = named.String()
		}
		for _, img := range f.Imgs {
			if slices.Contains(img.Refs, want) {
				c := *img
				return &c, nil
			}
		}
	}
	for id, img := range f.Imgs {
		if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), ref) {
			c := *img
			return &c, nil
		}
	}
	return nil, errdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

func (f *Fake) ContainerImage(ctx context.Context, ref string) (string, *dockerspec.DockerOCIImage, error) {
	img, err := f.LookupImage(ctx, ref)
	if err != nil {
		return "", nil, err
	}
	return img.ID, img.Config, nil
}

func (f *Fake) TagImage(_ context.Context, id, name string) error {
	for _, img := range f.Imgs {
		img.Refs = slices.DeleteFunc(img.Refs, func(r string) bool { return r == name })
	}
	f.Imgs[id].Refs = append(f.Imgs[id].Refs, name)
	return nil
}

func (f *Fake) UntagImage(_ context.Context, id, ref string) error {
	img := f.Imgs[id]
	img.Refs = slices.DeleteFunc(img.Refs, func(r string) bool { return r == ref })
	return nil
}

func (f *Fake) DeleteImage(_ context.Context, id string) ([]string, error) {
	if f.InUse[id] {
		return nil, fmt.Errorf("image %s is used by a container: %w", id, errdefs.ErrConflict)
	}
	img := f.Imgs[id]
	delete(f.Imgs, id)
	var layers []string
	for _, l := range img.Layers {
		layers = append(layers, l.ID)
	}
	return layers, nil
}

func (f *Fake) Driver() string            { return "overlay" }
func (f *Fake) DriverStatus() [][2]string { return nil }

func (f *Fake) CreateRootfs(context.Context, string, string, bool) (string, error) {
	return "", errFake
}
func (f *Fake) MountRootfs(context.Context, string) (string, error) { return "", errFake }
func (f *Fake) UnmountRootfs(context.Context, string) error         { return errFake }
func (f *Fake) MountImage(context.Context, string) (string, error)  { return "", errFake }
func (f *Fake) UnmountImage(context.Context, string) error          { return errFake }
func (f *Fake) RemoveRootfs(context.Context, string) error          { return errFake }
func (f *Fake) ResetRootfs(context.Context, string) error           { return errFake }
func (f *Fake) RootfsSize(context.Context, string) (int64, error)   { return 0, errFake }
func (f *Fake) Rootfses(context.Context) ([]string, error)          { return nil, nil }
func (f *Fake) RootfsDriverData(context.Context, string) (map[string]string, error) {
	return nil, errFake
}
func (f *Fake) RootfsChanges(context.Context, string) ([]containertypes.FilesystemChange, error) {
	return nil, errFake
}

func (f *Fake) PullImage(context.Context, string, string, registry.AuthConfig, string, func(jsonstream.Message)) error {
	return errFake
}
func (f *Fake) PushImage(context.Context, string, string, registry.AuthConfig, func(jsonstream.Message)) error {
	return errFake
}
func (f *Fake) RegistryLogin(context.Context, registry.AuthConfig) error { return errFake }
func (f *Fake) InspectDistribution(context.Context, string, registry.AuthConfig) (registry.DistributionInspect, error) {
	return registry.DistributionInspect{}, errFake
}
func (f *Fake) SearchRegistry(context.Context, string, int, registry.AuthConfig) ([]registry.SearchResult, error) {
	return nil, errFake
}

func (f *Fake) ImportImage(context.Context, io.Reader, imagestore.ImportConfig, string) (string, error) {
	return "", errFake
}
func (f *Fake) LoadImages(context.Context, io.Reader, imagestore.LoadOptions) ([]imagestore.LoadedImage, error) {
	return nil, errFake
}
func (f *Fake) SaveImages(context.Context, []imagestore.SaveImage, io.Writer) error { return errFake }
func (f *Fake) CommitImage(context.Context, string, imagestore.CommitImage) (string, error) {
	return "", errFake
}
