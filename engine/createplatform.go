package engine

import (
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// checkImagePlatform refuses a create whose platform the local image ref
// is not for. As Docker does, that is "no such image" (NotFound): the
// image for that platform is not here, and a client may pull it; a
// compatible variant (an arm/v6 image asked as arm/v7) is that image.
// An empty platform asks for nothing.
func checkImagePlatform(ref string, img *dockerspec.DockerOCIImage, platform string) error {
	if platform == "" || img == nil {
		return nil
	}
	want, err := platforms.Parse(platform)
	if err != nil {
		return errdefs.ErrInvalidArgument.WithMessage(err.Error())
	}
	have := ocispec.Platform{OS: img.OS, Architecture: img.Architecture, Variant: img.Variant}
	if platforms.Only(want).Match(have) {
		return nil
	}
	return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("image with reference %s was found but its platform (%s) does not match the specified platform (%s)",
		ref, platforms.FormatAll(have), platforms.FormatAll(want)))
}
