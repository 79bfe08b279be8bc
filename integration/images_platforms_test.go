//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/storage/testimage"
)

// An image's ID is its manifest's digest, as in Docker 29's containerd
// image store: docker save writes that manifest and docker load gives the
// image back under the same ID; a tag's repository has repo@<ID>, and
// removing it removes the repository's references.
func TestImageIDIsManifestDigest(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	img, err := c.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.Descriptor == nil || img.Descriptor.Digest.String() != img.ID || img.Descriptor.Size <= 0 || img.Descriptor.MediaType != ocispec.MediaTypeImageManifest {
		t.Fatalf("ID %s, Descriptor %+v", img.ID, img.Descriptor)
	}
	archive := filepath.Join(t.TempDir(), "saved.tar")
	must(t, d, "save", "-o", archive, ref)
	files := untarFiles(t, archive)
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 || index.Manifests[0].Digest.String() != img.ID {
		t.Fatalf("index.json %s: %v", files["index.json"], err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(files["blobs/sha256/"+index.Manifests[0].Digest.Encoded()], &man); err != nil || len(man.Layers) != len(img.RootFS.Layers) {
		t.Errorf("saved manifest %+v: %v", man, err)
	}
	must(t, d, "rmi", ref)
	must(t, d, "load", "-i", archive)
	if got := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref); got != img.ID {
		t.Errorf("loaded ID %s, saved %s", got, img.ID)
	}

	must(t, d, "tag", ref, "bydigest:1")
	want := "bydigest@" + img.ID
	if out := must(t, d, "image", "inspect", "--format", "{{json .RepoDigests}}", "bydigest:1"); !strings.Contains(out, `"`+want+`"`) {
		t.Errorf("RepoDigests %s, want %s among them", out, want)
	}
	if out := must(t, d, "rmi", want); out != "Untagged: bydigest:1" {
		t.Errorf("docker rmi %s = %q", want, out)
	}
	if _, err := c.ImageInspect(ctx, "bydigest:1"); !errdefs.IsNotFound(err) {
		t.Errorf("bydigest:1 after its removal: %v", err)
	}
	if _, err := c.ImageInspect(ctx, ref); err != nil {
		t.Errorf("%s after the removal of another name: %v", ref, err)
	}
}

// A pull of a multi-platform image for one platform, then another, keeps
// both under one name whose ID is the index's digest; inspect, history,
// save and rmi take platforms; what the image lacks is Docker's 404, and
// a removal by platform must be forced.
func TestImageMultiPlatform(t *testing.T) {
	reg := busyboxRegistry(t)
	native, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	nativeArch, otherArch := runtime.GOARCH, "arm64"
	if nativeArch == "arm64" {
		otherArch = "amd64"
	}
	other, err := testimage.ForPlatform(native, "linux", otherArch, "")
	if err != nil {
		t.Fatal(err)
	}
	riscv, err := testimage.ForPlatform(native, "linux", "riscv64", "")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := testimage.Index(native, other, riscv)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Addr + "/library/multi:latest"
	if err := testimage.PushIndex(context.Background(), ref, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()
	nativeP := ocispec.Platform{OS: "linux", Architecture: nativeArch}
	otherP := ocispec.Platform{OS: "linux", Architecture: otherArch}
	riscvP := ocispec.Platform{OS: "linux", Architecture: "riscv64"}

	must(t, d, "pull", "-q", ref)
	must(t, d, "pull", "-q", "--platform", "linux/"+otherArch, ref)
	if out := lines(must(t, d, "images", "--no-trunc", "--format", "{{.ID}}")); !slices.Equal(out, []string{idxDigest.String()}) {
		t.Errorf("docker images = %q, want the index %s alone", out, idxDigest)
	}
	for _, p := range []ocispec.Platform{nativeP, otherP} {
		img, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&p))
		if err != nil || img.Architecture != p.Architecture || img.Descriptor == nil || img.Descriptor.Platform == nil || img.Descriptor.Platform.Architecture != p.Architecture {
			t.Errorf("inspect for %s: %+v, %v", p.Architecture, img.Descriptor, err)
		}
		if h, err := c.ImageHistory(ctx, ref, client.ImageHistoryWithPlatform(p)); err != nil || len(h.Items) == 0 {
			t.Errorf("history for %s: %+v, %v", p.Architecture, h, err)
		}
	}
	img, err := c.ImageInspect(ctx, ref, client.ImageInspectWithManifests(true))
	if err != nil || img.ID != idxDigest.String() || img.Architecture != nativeArch || len(img.Manifests) != 3 {
		t.Fatalf("inspect with manifests: ID %s, arch %s, %d manifests, %v", img.ID, img.Architecture, len(img.Manifests), err)
	}
	available := 0
	for _, m := range img.Manifests {
		if m.Available {
			available++
		}
	}
	if available != 2 {
		t.Errorf("%d platforms available, want 2: %+v", available, img.Manifests)
	}
	if list, err := c.ImageList(ctx, client.ImageListOptions{Manifests: true}); err != nil || len(list.Items) != 1 || len(list.Items[0].Manifests) != 3 || list.Items[0].Descriptor == nil {
		t.Errorf("image list with manifests = %+v, %v", list, err)
	}
	if out := must(t, d, "run", "--rm", ref, "echo", "ran"); out != "ran" {
		t.Errorf("docker run of the multi-platform image = %q", out)
	}

	// BuildKit builds FROM it for the other platform, and the engine
	// keeps the result (an index of that platform's image) under its name.
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nCOPY file /file\n", "file": "cross\n"})
	bk(t, d, "build", "--progress=plain", "--platform", "linux/"+otherArch, "-t", "cross:1", dir)
	if out := must(t, d, "image", "inspect", "--format", "{{.Architecture}}", "cross:1"); out != otherArch {
		t.Errorf("cross-platform build's architecture = %q", out)
	}
	if h := lines(must(t, d, "history", "-q", "cross:1")); len(h) < 2 {
		t.Errorf("history of the cross-platform build = %q", h)
	}
	must(t, d, "rmi", "cross:1")

	// What the image lacks: Docker's 404 with its words, nothing changed.
	if _, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&riscvP)); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "does not provide the specified platform (linux/riscv64)") {
		t.Errorf("inspect for riscv64 = %v", err)
	}
	if rc, err := c.ImageSave(ctx, []string{ref}, client.ImageSaveWithPlatforms(riscvP)); err == nil {
		rc.Close()
		t.Errorf("save for riscv64 succeeded")
	} else if !errdefs.IsNotFound(err) {
		t.Errorf("save for riscv64 = %v", err)
	}
	code, body := rawDo(t, d, "DELETE", "/images/"+ref+"?platforms="+url.QueryEscape(`{"os":"linux","architecture":"`+otherArch+`"}`), nil, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "Use —-force to force delete") {
		t.Errorf("unforced removal by platform = %d %s", code, body)
	}

	// Save the other platform alone; load it back under the name.
	saved := saveBytes(t, c, ref, otherP)

	// Remove the other platform's content: the name stays, with the host's.
	res, err := c.ImageRemove(ctx, ref, client.ImageRemoveOptions{Platforms: []ocispec.Platform{otherP}, Force: true})
	if err != nil || len(res.Items) != 1 || res.Items[0].Deleted == "" || res.Items[0].Untagged != "" {
		t.Fatalf("removal of linux/%s = %+v, %v", otherArch, res, err)
	}
	if _, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&otherP)); !errdefs.IsNotFound(err) {
		t.Errorf("inspect for %s after its removal = %v", otherArch, err)
	}
	if _, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&nativeP)); err != nil {
		t.Errorf("inspect for the host after removing another platform: %v", err)
	}

	res, err = c.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
	if n := len(res.Items); err != nil || n < 2 || res.Items[0].Untagged != ref || res.Items[n-1].Deleted != idxDigest.String() || res.Items[n-2].Deleted != "" {
		t.Errorf("docker rmi of the multi-platform image = %+v, %v", res, err)
	}
	if out := must(t, d, "images", "-qa"); out != "" {
		t.Errorf("images left: %q", out)
	}
	lr, err := c.ImageLoad(ctx, bytes.NewReader(saved), client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(lr)
	lr.Close()
	if !strings.Contains(string(out), "Loaded image: "+ref) {
		t.Errorf("load of the saved platform: %s", out)
	}
	if img, err := c.ImageInspect(ctx, ref, client.ImageInspectWithPlatform(&otherP)); err != nil || img.Architecture != otherArch {
		t.Errorf("loaded %s: %v", otherArch, err)
	}
}

// saveBytes is the SDK's save of ref for platforms.
func saveBytes(t *testing.T, c *client.Client, ref string, platforms ...ocispec.Platform) []byte {
	t.Helper()
	rc, err := c.ImageSave(context.Background(), []string{ref}, client.ImageSaveWithPlatforms(platforms...))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// busyboxRegistry is a registry of the test's own.
func busyboxRegistry(t *testing.T) *registry {
	t.Helper()
	return startRegistry(t, "", "")
}

// untarFiles reads the regular files of a tar archive.
func untarFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[hdr.Name] = b
		}
	}
}
