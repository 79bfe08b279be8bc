//go:build integration

package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/pkg/authconfig"
	regtypes "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// GET /distribution/{name}/json against real docker-registries on loopback,
// through the Go SDK (the docker CLI has no command of its own for it):
// the manifest's descriptor and platforms, as dockerd reports them, and
// Docker's errors for missing tags, bad references and refused credentials.
func TestDistributionInspect(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()

	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("schema 2 image", func(t *testing.T) {
		res, err := c.DistributionInspect(ctx, ref, client.DistributionInspectOptions{})
		if err != nil {
			t.Fatalf("DistributionInspect(%s): %v\n%s", ref, err, d.Log())
		}
		desc := res.Descriptor
		if desc.MediaType != "application/vnd.docker.distribution.manifest.v2+json" || desc.Digest.String() != want.String() || desc.Size != int64(len(raw)) {
			t.Errorf("descriptor = %+v, want the schema 2 manifest %s of %d bytes", desc, want, len(raw))
		}
		if len(res.Platforms) != 1 || res.Platforms[0].OS != "linux" || res.Platforms[0].Architecture != cf.Architecture {
			t.Errorf("platforms = %+v, want linux/%s from the config", res.Platforms, cf.Architecture)
		}
		// By digest: the same manifest.
		byDigest := strings.TrimSuffix(ref, ":latest") + "@" + want.String()
		res, err = c.DistributionInspect(ctx, byDigest, client.DistributionInspectOptions{})
		if err != nil || res.Descriptor.Digest.String() != want.String() || res.Descriptor.Size != int64(len(raw)) {
			t.Errorf("DistributionInspect(%s) = %+v, %v", byDigest, res.Descriptor, err)
		}
	})

	t.Run("manifest list", func(t *testing.T) {
		arm, err := testimage.ForPlatform(img, "linux", "arm", "v7")
		if err != nil {
			t.Fatal(err)
		}
		idx, err := testimage.Index(img, arm)
		if err != nil {
			t.Fatal(err)
		}
		multi := strings.TrimSuffix(ref, "busybox:latest") + "multi:1"
		if err := testimage.PushIndex(ctx, multi, idx); err != nil {
			t.Fatal(err)
		}
		idxDigest, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.DistributionInspect(ctx, multi, client.DistributionInspectOptions{})
		if err != nil {
			t.Fatalf("DistributionInspect(%s): %v", multi, err)
		}
		if res.Descriptor.MediaType != "application/vnd.docker.distribution.manifest.list.v2+json" || res.Descriptor.Digest.String() != idxDigest.String() {
			t.Errorf("descriptor = %+v, want the list %s", res.Descriptor, idxDigest)
		}
		var got []string
		for _, p := range res.Platforms {
			got = append(got, p.OS+"/"+p.Architecture+"/"+p.Variant)
		}
		if strings.Join(got, " ") != "linux/"+cf.Architecture+"/ linux/arm/v7" {
			t.Errorf("platforms = %v", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		missing := strings.TrimSuffix(ref, ":latest") + ":nope"
		_, err := c.DistributionInspect(ctx, missing, client.DistributionInspectOptions{})
		if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "manifest unknown") {
			t.Errorf("missing tag: %v, want a 404 manifest unknown", err)
		}
		noRepo := strings.TrimSuffix(ref, "busybox:latest") + "nothere:1"
		if _, err := c.DistributionInspect(ctx, noRepo, client.DistributionInspectOptions{}); !errdefs.IsNotFound(err) {
			t.Errorf("missing repository: %v, want a 404", err)
		}
		if _, err := c.DistributionInspect(ctx, "UPPER", client.DistributionInspectOptions{}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("bad reference: %v, want a 400", err)
		}
		code, _, body := d.rawRequest(t, http.MethodGet, "/v1.47/distribution/sha256:"+want.Hex+"/json", "")
		if code != http.StatusInternalServerError || !strings.Contains(body, `"message":"no manifest found for full image ID"`) {
			t.Errorf("full image ID: %d %s", code, body)
		}
	})

	t.Run("credentials", func(t *testing.T) {
		_, private := privateBusybox(t)
		_, err := c.DistributionInspect(ctx, private, client.DistributionInspectOptions{})
		if !errdefs.IsUnauthorized(err) {
			t.Errorf("without credentials: %v, want a 401", err)
		}
		bad, _ := authconfig.Encode(regtypes.AuthConfig{Username: "hutch", Password: "wrong"})
		if _, err := c.DistributionInspect(ctx, private, client.DistributionInspectOptions{EncodedRegistryAuth: bad}); !errdefs.IsUnauthorized(err) {
			t.Errorf("with a wrong password: %v, want a 401", err)
		}
		good, _ := authconfig.Encode(regtypes.AuthConfig{Username: "hutch", Password: "s3cret"})
		res, err := c.DistributionInspect(ctx, private, client.DistributionInspectOptions{EncodedRegistryAuth: good})
		if err != nil || res.Descriptor.Digest.String() != want.String() {
			t.Errorf("with credentials: %+v, %v", res.Descriptor, err)
		}
		if strings.Contains(d.Log(), "s3cret") || strings.Contains(d.Log(), "wrong") {
			t.Error("the daemon logged a password")
		}
	})
}
