package images

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// The store holds one platform of an image. A request that names a
// platform (inspect, history, push, rmi) gets the image only when it is of
// that platform, as Docker's single-platform image store answers.

// imagePlatform is img's platform as its config states it.
func imagePlatform(img *imagestore.Image) ocispec.Platform {
	if img.Config == nil {
		return ocispec.Platform{}
	}
	return ocispec.Platform{OS: img.Config.OS, Architecture: img.Config.Architecture, Variant: img.Config.Variant}
}

// platformMatches reports whether an image of platform got serves a
// request for want: containerd's rules (an arm/v6 image serves arm/v7),
// and an image without a variant serves any variant of its architecture,
// since image configs often leave it out.
func platformMatches(want, got ocispec.Platform) bool {
	if platforms.Only(want).Match(got) {
		return true
	}
	if got.Variant != "" {
		return false
	}
	w, g := platforms.Normalize(want), platforms.Normalize(got)
	return w.OS == g.OS && w.Architecture == g.Architecture
}

// checkPlatform refuses img, found by ref, when it is not of platform want
// (nil: any), with Docker's message.
func checkPlatform(img *imagestore.Image, ref string, want *ocispec.Platform) error {
	if want == nil {
		return nil
	}
	got := imagePlatform(img)
	if platformMatches(*want, got) {
		return nil
	}
	name := ref
	if named, err := reference.ParseNamed(ref); err == nil {
		name = reference.FamiliarString(named)
	}
	return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)",
		name, platforms.FormatAll(got), platforms.FormatAll(*want)))
}

// hasPlatform reports whether img has content for one of plats: its own
// platform, or an available platform of a multi-platform image.
func hasPlatform(img *imagestore.Image, plats []ocispec.Platform) bool {
	for _, want := range plats {
		if img.Platforms == nil && platformMatches(want, imagePlatform(img)) {
			return true
		}
		for _, p := range img.Platforms {
			if p.Available && p.Descriptor.Platform != nil && platforms.OnlyStrict(want).Match(*p.Descriptor.Platform) {
				return true
			}
		}
	}
	return false
}

// formatPlatforms writes plats as Docker's messages list them.
func formatPlatforms(plats []ocispec.Platform) string {
	out := make([]string, len(plats))
	for i, p := range plats {
		out[i] = platforms.FormatAll(p)
	}
	return strings.Join(out, ", ")
}

// lookupPlatform finds ref with, for a multi-platform image, the content
// of platform want (nil: the host's, else any it has); an image of one
// platform must be of want.
func lookupPlatform(ctx context.Context, store imagestore.Store, ref string, want *ocispec.Platform) (*imagestore.Image, error) {
	img, err := store.LookupImagePlatform(ctx, ref, want)
	if err != nil {
		return nil, err
	}
	if img.Platforms == nil {
		if err := checkPlatform(img, ref, want); err != nil {
			return nil, err
		}
	}
	return img, nil
}
