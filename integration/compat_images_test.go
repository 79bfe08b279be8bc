//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image listing and the platform parameters as Docker Engine 29 answers
// them (moby's integration/image list, inspect, pull and identity tests),
// through the Go SDK and the docker CLI.

// TestCompatImageListReference: a reference filter matches the familiar
// and the canonical forms of a name, with or without the tag, as globs.
func TestCompatImageListReference(t *testing.T) {
	d, ref := pulled(t)
	for _, n := range []string{"utest:tag1", "utest/docker:tag2", "utest:5000/docker:tag3", "busybox:latest"} {
		must(t, d, "tag", ref, n)
	}
	c := d.Client(t)
	for _, tc := range []struct {
		filter string
		tags   []string // the RepoTags of the one image listed; nil: none listed
	}{
		{"utest*/*", []string{"utest/docker:tag2", "utest:5000/docker:tag3"}},
		{"utest*", []string{"utest:tag1"}},
		{"utest", []string{"utest:tag1"}},
		{"*5000*/*", []string{"utest:5000/docker:tag3"}},
		{"docker.io/library/utest", []string{"utest:tag1"}},
		{"docker.io/library/utest:*", []string{"utest:tag1"}},
		{"docker.io/utest/docker", []string{"utest/docker:tag2"}},
		{"docker.io/library/busybox", []string{"busybox:latest"}},
		{"docker.io/library/busybox:latest", []string{"busybox:latest"}},
		{"docker.io/library/nosuch", nil},
		{"docker.io/library/busybox:1", nil},
	} {
		res, err := c.ImageList(context.Background(), client.ImageListOptions{Filters: make(client.Filters).Add("reference", tc.filter)})
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		if tc.tags == nil {
			if len(res.Items) != 0 {
				t.Errorf("%s: listed %+v", tc.filter, res.Items)
			}
			continue
		}
		if len(res.Items) != 1 {
			t.Errorf("%s: %d images, want 1", tc.filter, len(res.Items))
			continue
		}
		got := slices.Sorted(slices.Values(res.Items[0].RepoTags))
		if !slices.Equal(got, tc.tags) {
			t.Errorf("%s: RepoTags %q, want %q", tc.filter, got, tc.tags)
		}
	}
	// docker images <name> sends the name as a reference filter.
	if out := must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}", "docker.io/library/busybox"); out != "busybox:latest" {
		t.Errorf("docker images docker.io/library/busybox = %q", out)
	}
}

// otherPlatform is a platform the test images are not of.
func otherPlatform(native ocispec.Platform) ocispec.Platform {
	if native.Architecture == "arm64" {
		return ocispec.Platform{OS: "linux", Architecture: "amd64"}
	}
	return ocispec.Platform{OS: "linux", Architecture: "arm64"}
}

// TestCompatImagePlatformParameters: invalid platforms are refused with
// Docker's 400 and message, storing nothing; a valid platform the image
// is not of is Docker's 404; the image's own platform is served.
func TestCompatImagePlatformParameters(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	img, err := c.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	native := ocispec.Platform{OS: img.Os, Architecture: img.Architecture, Variant: img.Variant}
	other := otherPlatform(native)
	ids := func() []string { return lines(must(t, d, "images", "-qa", "--no-trunc")) }
	before := ids()

	// Pull and import take a specifier, refused as containerd's parser
	// refuses it.
	_, err = c.ImagePull(ctx, ref, client.ImagePullOptions{Platforms: []ocispec.Platform{{OS: "foobar"}}})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), `"foobar": unknown operating system or architecture: invalid argument`) {
		t.Errorf("pull with platform foobar = %v", err)
	}
	code, body := rawDo(t, d, "POST", "/images/create?fromImage="+url.QueryEscape(ref)+"&platform=linux/", nil, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, `is an invalid component of \"linux/\"`) {
		t.Errorf("pull with platform linux/ = %d %s", code, body)
	}
	empty := rootfsTar(t, false)
	for p, msg := range map[string]string{"   ": "is an invalid OS component of", "macos": "operating system is not supported", "nintendo64": "unknown operating system or architecture"} {
		_, err := c.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(empty), SourceName: "-"}, "imported:1", client.ImageImportOptions{Platform: ocispec.Platform{OS: p}})
		if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), msg) {
			t.Errorf("import with platform %q = %v, want %q", p, err, msg)
		}
	}
	_, err = c.ImageBuild(ctx, contextTar(t, map[string]string{"Dockerfile": "FROM scratch\n"}), client.ImageBuildOptions{Platforms: []ocispec.Platform{{OS: "foobar"}}})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "unknown operating system or architecture") {
		t.Errorf("build with platform foobar = %v", err)
	}

	// Inspect, history, save, load and rmi take Docker's JSON platform.
	for path, msg := range map[string]string{
		"/images/" + ref + "/json?platform=linux":                                                                   "failed to parse platform: invalid character",
		"/images/" + ref + "/history?platform=" + url.QueryEscape(`{"os":"linux"}`):                                 "both OS and Architecture must be provided",
		"/images/" + ref + "/json?manifests=1&platform=" + url.QueryEscape(`{"os":"linux","architecture":"amd64"}`): "conflicting options: manifests and platform options cannot both be set",
		"/v1.54/images/json?identity=1":                                                                             "conflicting options: identity requires manifests=1",
		"/images/get?names=" + url.QueryEscape(ref) + "&platform=" + url.QueryEscape(`{"variant":"v8"}`):            "optional platform fields provided, but OS and Architecture are missing",
	} {
		code, body := rawDo(t, d, "GET", path, nil, nil)
		if code != http.StatusBadRequest || !strings.Contains(body, msg) {
			t.Errorf("GET %s = %d %s, want 400 %q", path, code, body, msg)
		}
	}

	want := "was found but its platform (" + platformString(native) + ") does not match the specified platform (" + platformString(other) + ")"
	if _, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&other)); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("inspect for %v = %v", other, err)
	}
	if res, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&native)); err != nil || res.ID != img.ID {
		t.Errorf("inspect for the image's platform = %v", err)
	}
	if _, err := c.ImageHistory(ctx, ref, client.ImageHistoryWithPlatform(other)); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("history for %v = %v", other, err)
	}
	// Removing by platform must be forced, as Docker 29 asks.
	if _, err := c.ImageRemove(ctx, ref, client.ImageRemoveOptions{Platforms: []ocispec.Platform{other}}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "Use —-force to force delete") {
		t.Errorf("unforced rmi for %v = %v", other, err)
	}
	if _, err := c.ImageRemove(ctx, ref, client.ImageRemoveOptions{Platforms: []ocispec.Platform{other}, Force: true}); !errdefs.IsNotFound(err) {
		t.Errorf("rmi for %v = %v", other, err)
	}
	if rc, err := c.ImageSave(ctx, []string{ref}, client.ImageSaveWithPlatforms(other)); err == nil {
		rc.Close()
		t.Errorf("save for %v succeeded", other)
	} else if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "no suitable export target found for platform "+platformString(other)) {
		t.Errorf("save for %v = %v", other, err)
	}
	archive := saveBytes(t, c, ref, native)
	if got := ids(); !slices.Equal(got, before) {
		t.Fatalf("images after the refused requests: %q, before %q", got, before)
	}

	// Load of an archive without the platform asked for: an error in the
	// 200 stream, nothing stored.
	must(t, d, "rmi", ref)
	lr, err := c.ImageLoad(ctx, bytes.NewReader(archive), client.ImageLoadWithPlatforms(other))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(lr)
	lr.Close()
	if !strings.Contains(string(out), `"errorDetail":{"message":"no images providing the requested platform(s) found: [`+platformString(other)+`]"}`) {
		t.Errorf("load for %v = %s", other, out)
	}
	if got := ids(); len(got) != 0 {
		t.Errorf("images after a load of no image: %q", got)
	}
	lr, err = c.ImageLoad(ctx, bytes.NewReader(archive), client.ImageLoadWithPlatforms(native))
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(lr)
	lr.Close()
	if !strings.Contains(string(out), "Loaded image: "+ref) {
		t.Errorf("load for the image's platform = %s", out)
	}
}

func platformString(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
