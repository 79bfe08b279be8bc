//go:build integration

package integration

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/pkg/authconfig"
	regtypes "github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// docker search against real docker-registries on loopback: they have no
// v1 search, so their catalog answers (dockerd fails there with
// "unexpected status code 404"), names with the registry's host. Docker's
// filters, limits and errors through the CLI and the SDK, and a registry
// behind htpasswd with and without credentials.
func TestImageSearch(t *testing.T) {
	ref := busybox(t)
	host := strings.Split(ref, "/")[0]
	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tools/busybox-extras:1", "library/alpine-search:1"} {
		if err := testimage.Push(context.Background(), host+"/"+name, img); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()

	t.Run("cli", func(t *testing.T) {
		out := must(t, d, "search", "--format", "{{.Name}}|{{.StarCount}}|{{.IsOfficial}}", host+"/busybox")
		// The CLI shows an official mark as "[OK]", none as "".
		lines := strings.Fields(out)
		slices.Sort(lines)
		if len(lines) != 2 || lines[0] != host+"/library/busybox|0|" || lines[1] != host+"/tools/busybox-extras|0|" {
			t.Errorf("docker search:\n%s", out)
		}
		out = must(t, d, "search", host+"/busybox")
		if !strings.HasPrefix(out, "NAME") || !strings.Contains(out, host+"/library/busybox") {
			t.Errorf("docker search table:\n%s", out)
		}
		if out := must(t, d, "search", "--limit", "1", "--format", "{{.Name}}", host+"/busybox"); len(strings.Fields(out)) != 1 {
			t.Errorf("--limit 1:\n%s", out)
		}
		for _, f := range []string{"is-official=true", "stars=1", "is-automated=true"} {
			// (The CLI warns of is-automated, deprecated, on stderr.)
			if out := must(t, d, "search", "--filter", f, "--format", "{{.Name}}", host+"/busybox"); strings.Contains(out, host) {
				t.Errorf("--filter %s kept:\n%s", f, out)
			}
		}
		if out := must(t, d, "search", "--filter", "is-official=false", "--format", "{{.Name}}", host+"/alpine"); strings.TrimSpace(out) != host+"/library/alpine-search" {
			t.Errorf("--filter is-official=false:\n%s", out)
		}
		out, err := d.Docker(t, "search", "--filter", "bogus=1", host+"/busybox")
		if err == nil || !strings.Contains(out, "invalid filter 'bogus'") {
			t.Errorf("unknown filter: %v\n%s", err, out)
		}
		out, err = d.Docker(t, "search", "--limit", "101", host+"/busybox")
		if err == nil || !strings.Contains(out, "limit 101 is outside the range of [1, 100]") {
			t.Errorf("limit 101: %v\n%s", err, out)
		}
	})

	t.Run("sdk", func(t *testing.T) {
		res, err := c.ImageSearch(ctx, host+"/busybox-extras", client.ImageSearchOptions{})
		if err != nil || len(res.Items) != 1 || res.Items[0].Name != host+"/tools/busybox-extras" {
			t.Errorf("ImageSearch = %+v, %v", res.Items, err)
		}
		res, err = c.ImageSearch(ctx, host+"/nothing-like-it", client.ImageSearchOptions{})
		if err != nil || res.Items == nil || len(res.Items) != 0 {
			t.Errorf("no match = %#v, %v, want an empty list", res.Items, err)
		}
		f := make(client.Filters).Add("stars", "many")
		if _, err := c.ImageSearch(ctx, host+"/busybox", client.ImageSearchOptions{Filters: f}); !errdefs.IsInvalidArgument(err) ||
			!strings.Contains(err.Error(), "invalid filter 'stars=many'") {
			t.Errorf("stars=many: %v", err)
		}
		code, _, body := d.rawRequest(t, http.MethodGet, "/images/search?term="+url.QueryEscape("http://"+host+"/busybox"), "")
		if code != http.StatusBadRequest || !strings.Contains(body, "should not have a scheme") {
			t.Errorf("term with a scheme: %d %s", code, body)
		}
		code, _, body = d.rawRequest(t, http.MethodGet, "/images/search?term=busybox&limit=x", "")
		if code != http.StatusBadRequest || !strings.Contains(body, "invalid limit specified") {
			t.Errorf("limit x: %d %s", code, body)
		}
	})

	t.Run("credentials", func(t *testing.T) {
		reg, _ := privateBusybox(t)
		term := reg.Addr + "/busybox"
		if _, err := c.ImageSearch(ctx, term, client.ImageSearchOptions{}); !errdefs.IsUnauthorized(err) {
			t.Errorf("without credentials: %v, want a 401", err)
		}
		bad, _ := authconfig.Encode(regtypes.AuthConfig{Username: "hutch", Password: "wrong"})
		if _, err := c.ImageSearch(ctx, term, client.ImageSearchOptions{RegistryAuth: bad}); !errdefs.IsUnauthorized(err) {
			t.Errorf("with a wrong password: %v, want a 401", err)
		}
		good, _ := authconfig.Encode(regtypes.AuthConfig{Username: "hutch", Password: "s3cret"})
		res, err := c.ImageSearch(ctx, term, client.ImageSearchOptions{RegistryAuth: good})
		if err != nil || len(res.Items) != 1 || res.Items[0].Name != reg.Addr+"/private/busybox" {
			t.Errorf("with credentials: %+v, %v", res.Items, err)
		}
		// The CLI sends the credentials docker login stored for the registry.
		cfg := t.TempDir()
		if out, err := dockerCfg(t, d, cfg, "s3cret\n", "login", reg.Addr, "-u", "hutch", "--password-stdin"); err != nil {
			t.Fatalf("login: %v\n%s", err, out)
		}
		out, err := dockerCfg(t, d, cfg, "", "search", "--format", "{{.Name}}", term)
		if err != nil || strings.TrimSpace(out) != reg.Addr+"/private/busybox" {
			t.Errorf("docker search after login: %v\n%s", err, out)
		}
		if strings.Contains(d.Log(), "s3cret") || strings.Contains(d.Log(), "wrong") {
			t.Error("the daemon logged a password")
		}
	})
}
