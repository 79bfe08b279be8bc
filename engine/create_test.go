package engine

import (
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The host configs Docker refuses at create, in its words; each is an
// invalid argument (400), from validateHostConfig or checkCreate.
func TestValidateHostConfigMessages(t *testing.T) {
	rp := func(name string, n int) containertypes.HostConfig {
		return containertypes.HostConfig{RestartPolicy: containertypes.RestartPolicy{Name: containertypes.RestartPolicyMode(name), MaximumRetryCount: n}}
	}
	tests := []struct {
		name string
		hc   containertypes.HostConfig
		want string // "" is valid
	}{
		{"unknown policy", rp("something", 0), "invalid restart policy: unknown policy 'something'; use one of 'no', 'always', 'on-failure', or 'unless-stopped'"},
		{"retries with always", rp("always", 2), "invalid restart policy: maximum retry count can only be used with 'on-failure'"},
		{"negative retries with always", rp("always", -1), "invalid restart policy: maximum retry count can only be used with 'on-failure' and cannot be negative"},
		{"negative retries", rp("on-failure", -2), "invalid restart policy: maximum retry count cannot be negative"},
		{"default retries", rp("on-failure", 0), ""},
		{"empty name takes retries", rp("", 3), ""},
		{"UTS mode", containertypes.HostConfig{UTSMode: "invalid"}, "invalid UTS mode: invalid"},
		{"UTS host", containertypes.HostConfig{UTSMode: "host"}, ""},
		{"empty annotation key", containertypes.HostConfig{Annotations: map[string]string{"": "a"}}, "invalid Annotations: the empty string is not permitted as an annotation key"},
		{"annotations", containertypes.HostConfig{Annotations: map[string]string{"com.example.key": ""}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateHostConfig(&tc.hc)
			if err == nil {
				err = checkCreate(&containertypes.Config{}, &tc.hc)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want invalid argument %q", err, tc.want)
			}
		})
	}
}

// A create for a platform the local image is not for finds no image, as
// in Docker; a compatible variant is the image.
func TestCheckImagePlatform(t *testing.T) {
	img := func(os, arch, variant string) *dockerspec.DockerOCIImage {
		return &dockerspec.DockerOCIImage{Image: ocispec.Image{Platform: ocispec.Platform{OS: os, Architecture: arch, Variant: variant}}}
	}
	tests := []struct {
		name     string
		img      *dockerspec.DockerOCIImage
		platform string
		want     string // "" matches; "invalid" is a bad platform
	}{
		{"none asked", img("linux", "amd64", ""), "", ""},
		{"same", img("linux", "amd64", ""), "linux/amd64", ""},
		{"other os", img("linux", "amd64", ""), "linuxDifferentOS/amd64",
			"image with reference busybox:latest was found but its platform (linux/amd64) does not match the specified platform (linuxdifferentos/amd64)"},
		{"other arch", img("linux", "amd64", ""), "linux/amd64DifferentArch",
			"image with reference busybox:latest was found but its platform (linux/amd64) does not match the specified platform (linux/amd64differentarch)"},
		{"older arm variant runs", img("linux", "arm", "v6"), "linux/arm/v7", ""},
		{"newer arm variant does not", img("linux", "arm", "v7"), "linux/arm/v6",
			"image with reference busybox:latest was found but its platform (linux/arm/v7) does not match the specified platform (linux/arm/v6)"},
		{"malformed", img("linux", "amd64", ""), "linux/amd64/v1/x", "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkImagePlatform("busybox:latest", tc.img, tc.platform)
			switch {
			case tc.want == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case tc.want == "invalid":
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
			case err == nil || err.Error() != tc.want || !errdefs.IsNotFound(err):
				t.Fatalf("err = %v, want not found %q", err, tc.want)
			}
		})
	}
}
