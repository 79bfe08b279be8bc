//go:build integration

package integration

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Pull errors and parameters as Docker Engine 29 answers them (moby's
// integration/image TestImagePullNonExisting), through the docker CLI,
// the Go SDK and the raw API.

// TestCompatPullNonExisting: a registry that refuses an anonymous pull is
// answered as Docker answers it, 404 "pull access denied … may require
// 'docker login'"; one that does not know the repository is a 404 too.
// Nothing is stored either way.
func TestCompatPullNonExisting(t *testing.T) {
	reg, _ := privateBusybox(t)
	open := busybox(t)
	openHost, _, _ := strings.Cut(open, "/")
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()
	for _, ref := range []string{reg.Addr + "/asdfasdf:foobar", reg.Addr + "/library/asdfasdf", reg.Addr + "/private/busybox:1"} {
		name, _, _ := strings.Cut(strings.TrimPrefix(ref, reg.Addr+"/"), ":")
		want := "pull access denied for " + reg.Addr + "/" + name + ", repository does not exist or may require 'docker login'"
		rc, err := c.ImagePull(ctx, ref, client.ImagePullOptions{})
		if err == nil {
			rc.Close()
		}
		if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("SDK pull %s = %v, want not found %q", ref, err, want)
		}
		if out, err := d.Docker(t, "pull", ref); err == nil || !strings.Contains(out, want) {
			t.Errorf("docker pull %s: %v %s", ref, err, out)
		}
	}
	for _, ref := range []string{openHost + "/asdfasdf:foobar", openHost + "/library/asdfasdf"} {
		rc, err := c.ImagePull(ctx, ref, client.ImagePullOptions{})
		if err == nil {
			rc.Close()
		}
		if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "not found") {
			t.Errorf("SDK pull %s = %v, want not found", ref, err)
		}
	}
	if out := must(t, d, "images", "-qa"); out != "" {
		t.Errorf("images after failed pulls: %q", out)
	}
}

// TestCompatPullTagDigest: the tag parameter of POST /images/create may be
// a digest, pulled as name@digest, as Docker does.
func TestCompatPullTagDigest(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	must(t, d, "pull", "-q", ref)
	digested := must(t, d, "image", "inspect", "--format", "{{index .RepoDigests 0}}", ref)
	name, dgst, _ := strings.Cut(digested, "@")
	must(t, d, "rmi", ref)

	code, body := rawDo(t, d, "POST", "/images/create?fromImage="+url.QueryEscape(name)+"&tag="+url.QueryEscape(dgst), nil, nil)
	if code != http.StatusOK || !strings.Contains(body, `"status":"Digest: `+dgst+`"`) || strings.Contains(body, "errorDetail") {
		t.Fatalf("pull with tag=%s = %d %s", dgst, code, body)
	}
	if out := must(t, d, "images", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"); out != name+" <none> "+dgst {
		t.Errorf("images after the pull by digest = %q", out)
	}
	// A name with a tag of its own: the digest replaces it.
	rc, err := d.Client(t).ImagePull(context.Background(), name+":latest", client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()

	missing := "sha256:" + strings.Repeat("0", 64)
	code, body = rawDo(t, d, "POST", "/images/create?fromImage="+url.QueryEscape(name+":latest")+"&tag="+missing, nil, nil)
	if code != http.StatusNotFound || !strings.Contains(body, "manifest for "+name+"@"+missing+" not found") {
		t.Errorf("pull of a missing digest = %d %s", code, body)
	}
}
