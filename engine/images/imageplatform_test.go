package images

import (
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

func TestCheckPlatform(t *testing.T) {
	img := func(os, arch, variant string) *imagestore.Image {
		cfg := &dockerspec.DockerOCIImage{}
		cfg.OS, cfg.Architecture, cfg.Variant = os, arch, variant
		return &imagestore.Image{Config: cfg}
	}
	p := func(os, arch, variant string) *ocispec.Platform {
		return &ocispec.Platform{OS: os, Architecture: arch, Variant: variant}
	}
	tests := []struct {
		name string
		img  *imagestore.Image
		ref  string
		want *ocispec.Platform
		msg  string // "" when it matches
	}{
		{"no platform asked", img("linux", "amd64", ""), "x", nil, ""},
		{"same", img("linux", "amd64", ""), "x", p("linux", "amd64", ""), ""},
		{"image without variant", img("linux", "arm64", ""), "x", p("linux", "arm64", "v8"), ""},
		{"older arm variant serves newer", img("linux", "arm", "v6"), "x", p("linux", "arm", "v7"), ""},
		{"other arch", img("linux", "amd64", ""), "busybox:latest", p("linux", "arm64", ""),
			"image with reference busybox:latest was found but its platform (linux/amd64) does not match the specified platform (linux/arm64)"},
		{"canonical name shown familiar", img("linux", "amd64", ""), "docker.io/library/busybox:latest", p("windows", "amd64", ""),
			"image with reference busybox:latest was found but its platform (linux/amd64) does not match the specified platform (windows/amd64)"},
		{"newer variant does not serve older", img("linux", "arm", "v7"), "x", p("linux", "arm", "v6"),
			"image with reference x was found but its platform (linux/arm/v7) does not match the specified platform (linux/arm/v6)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPlatform(tc.img, tc.ref, tc.want)
			switch {
			case tc.msg == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.msg != "" && (!errdefs.IsNotFound(err) || err.Error() != tc.msg):
				t.Errorf("err = %v, want not found %q", err, tc.msg)
			}
		})
	}
}
