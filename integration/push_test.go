//go:build integration

package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// docker push of a committed image to docker-registry on loopback, plain
// and behind htpasswd, and the pull that brings it back.

// pushDone is the closing line of a push of tag.
func pushDone(tag string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(tag) + `: digest: sha256:[0-9a-f]{64} size: [0-9]+$`)
}

// countSuffix counts the lines ending with suffix.
func countSuffix(ls []string, suffix string) int {
	n := 0
	for _, l := range ls {
		if strings.HasSuffix(l, suffix) {
			n++
		}
	}
	return n
}

func TestPush(t *testing.T) {
	reg := startRegistry(t, "", "")
	d, ref := pulled(t)
	madeContainer(t, d, ref, "p1")
	repo := reg.Addr + "/mine/pushed"
	id := must(t, d, "commit", "p1", repo+":1")

	out := lines(must(t, d, "push", repo+":1"))
	if len(out) < 4 || out[0] != "The push refers to repository ["+repo+"]" || countSuffix(out, ": Preparing") != 2 ||
		countSuffix(out, ": Pushed") != 2 || !pushDone("1").MatchString(out[len(out)-1]) {
		t.Errorf("docker push:\n%s", strings.Join(out, "\n"))
	}
	out = lines(must(t, d, "push", repo+":1"))
	if countSuffix(out, ": Layer already exists") != 2 || countSuffix(out, ": Pushed") != 0 || !pushDone("1").MatchString(out[len(out)-1]) {
		t.Errorf("second docker push:\n%s", strings.Join(out, "\n"))
	}

	// The SDK sees Docker's stream: progressDetail while pushing, the
	// digest as aux data at the end.
	must(t, d, "tag", repo+":1", repo+":2")
	resp, err := d.Client(t).ImagePush(context.Background(), repo+":2", client.ImagePushOptions{RegistryAuth: base64.URLEncoding.EncodeToString([]byte("{}"))})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jsonstream.Message
	for m, err := range resp.JSONMessages(context.Background()) {
		if err != nil {
			t.Fatalf("push stream: %v", err)
		}
		msgs = append(msgs, m)
	}
	var aux struct{ Tag, Digest string }
	if n := len(msgs); n < 3 || msgs[0].Status != "The push refers to repository ["+repo+"]" || msgs[n-1].Aux == nil ||
		json.Unmarshal(*msgs[n-1].Aux, &aux) != nil || aux.Tag != "2" || !strings.HasPrefix(aux.Digest, "sha256:") ||
		!pushDone("2").MatchString(msgs[n-2].Status) {
		t.Errorf("SDK push stream: %+v", msgs)
	}
	for _, m := range msgs[1 : len(msgs)-2] {
		if len(m.ID) != 12 || (m.Status != "Preparing" && m.Status != "Waiting" && m.Status != "Layer already exists") {
			t.Errorf("layer message %+v", m)
		}
	}

	// The pushed image comes back with its files.
	must(t, d, "rmi", repo+":1", repo+":2")
	if out, err := d.Docker(t, "image", "inspect", id); err == nil {
		t.Fatalf("the image is still there after rmi:\n%s", out)
	}
	if out := must(t, d, "pull", repo+":1"); !strings.Contains(out, "Status: Downloaded newer image for "+repo+":1") {
		t.Errorf("docker pull:\n%s", out)
	}
	if got := must(t, d, "image", "inspect", "--format", "{{.Id}}", repo+":1"); got != id {
		t.Errorf("pulled %s, pushed %s", got, id)
	}
	if out := must(t, d, "run", "--rm", repo+":1", "sh", "-c", "cat /file; test -e /etc/group || echo gone"); out != "hello\ngone" {
		t.Errorf("the pulled image: %q", out)
	}

	if out, err := d.Docker(t, "push", reg.Addr+"/nothere:1"); err == nil || !strings.Contains(out, "An image does not exist locally with the tag: "+reg.Addr+"/nothere") {
		t.Errorf("push of a missing image: %v\n%s", err, out)
	}
}

func TestPushAuth(t *testing.T) {
	reg := startRegistry(t, "hutch", "s3cret")
	d, ref := pulled(t)
	madeContainer(t, d, ref, "p1")
	name := reg.Addr + "/private/pushed:1"
	must(t, d, "commit", "p1", name)
	cfg := t.TempDir()

	out, err := dockerCfg(t, d, cfg, "", "push", name)
	if err == nil || !strings.Contains(out, "unauthorized: authentication required to push to "+reg.Addr+" (docker login "+reg.Addr+")") {
		t.Errorf("push without login: %v\n%s", err, out)
	}
	// Credentials the registry refuses (a stale login).
	wrong := base64.StdEncoding.EncodeToString([]byte("hutch:wrong"))
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths":{"`+reg.Addr+`":{"auth":"`+wrong+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = dockerCfg(t, d, cfg, "", "push", name)
	if err == nil || !strings.Contains(out, "unauthorized: authentication required: "+reg.Addr+" rejected the credentials") {
		t.Errorf("push with wrong credentials: %v\n%s", err, out)
	}

	if out, err := dockerCfg(t, d, cfg, "s3cret\n", "login", reg.Addr, "-u", "hutch", "--password-stdin"); err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	out, err = dockerCfg(t, d, cfg, "", "push", name)
	ls := lines(out)
	if err != nil || countSuffix(ls, ": Pushed") != 2 || !pushDone("1").MatchString(ls[len(ls)-1]) {
		t.Fatalf("push after login: %v\n%s\n%s", err, out, d.Log())
	}
	must(t, d, "rmi", name)
	if out, err := dockerCfg(t, d, cfg, "", "pull", name); err != nil {
		t.Fatalf("pull after push: %v\n%s", err, out)
	}
	if out := must(t, d, "run", "--rm", name, "cat", "/file"); out != "hello" {
		t.Errorf("cat /file in the pulled image = %q", out)
	}
	if strings.Contains(d.Log(), "s3cret") {
		t.Error("the daemon logged the password")
	}
}
