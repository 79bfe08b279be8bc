package engine

import (
	"context"
	"testing"
	"time"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// stepImage is an image a build step made on parent.
func stepImage(n int, parent, createdBy string, cfg *containertypes.Config, created time.Time) *imagestore.Image {
	img := imagestoretest.Image(n)
	img.Parent, img.Created = parent, created
	img.Config = &dockerspec.DockerOCIImage{
		Image:  ocispec.Image{History: []ocispec.History{{CreatedBy: "base"}, {CreatedBy: createdBy}}},
		Config: imageConfigOf(cfg),
	}
	return img
}

func TestBuildCached(t *testing.T) {
	now := time.Now()
	cfg := &containertypes.Config{Env: []string{"A=1"}, Cmd: []string{"sh"}}
	other := &containertypes.Config{Env: []string{"A=2"}, Cmd: []string{"sh"}}
	old := stepImage(1, "sha256:p", "/bin/sh -c #(nop)  ENV A=1", cfg, now.Add(-time.Hour))
	newer := stepImage(2, "sha256:p", "/bin/sh -c #(nop)  ENV A=1", cfg, now)
	imgs := imagestoretest.New(old, newer,
		stepImage(3, "sha256:q", "/bin/sh -c #(nop)  ENV A=1", cfg, now),   // another parent
		stepImage(4, "sha256:p", "/bin/sh -c #(nop)  ENV A=2", other, now), // another step
		stepImage(5, "sha256:p", "/bin/sh -c #(nop)  ENV A=1", other, now), // another config
	)
	b := buildBackend{e: &Engine{images: imgs}}
	ctx := context.Background()
	// The empty and the nil Entrypoint are the same config once stored.
	probe := *cfg
	probe.Entrypoint = []string{}
	if id, err := b.Cached(ctx, "sha256:p", "/bin/sh -c #(nop)  ENV A=1", &probe); err != nil || id != newer.ID {
		t.Errorf("Cached = %q, %v; want the newest match %s", id, err, newer.ID)
	}
	for _, tc := range []struct{ parent, createdBy string }{
		{"sha256:p", "/bin/sh -c #(nop)  ENV A=3"},
		{"sha256:none", "/bin/sh -c #(nop)  ENV A=1"},
	} {
		if id, err := b.Cached(ctx, tc.parent, tc.createdBy, cfg); err != nil || id != "" {
			t.Errorf("Cached(%s, %s) = %q, %v; want none", tc.parent, tc.createdBy, id, err)
		}
	}
}

func TestBuildAuthFor(t *testing.T) {
	b := buildBackend{auth: map[string]registry.AuthConfig{
		"https://index.docker.io/v1/": {Username: "hub"},
		"localhost:5000":              {Username: "local"},
		"https://reg.example:8443":    {Username: "schemed"},
	}}
	for ref, want := range map[string]string{
		"busybox":                     "hub",
		"docker.io/library/busybox:1": "hub",
		"localhost:5000/x/y:tag":      "local",
		"reg.example:8443/z":          "schemed",
		"127.0.0.1:5000/unknown":      "",
		"not a reference":             "",
	} {
		if got := b.authFor(ref).Username; got != want {
			t.Errorf("authFor(%q) = %q, want %q", ref, got, want)
		}
	}
}
