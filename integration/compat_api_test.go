//go:build integration

package integration

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Requests Docker refuses, refused with Docker's status and words, and
// nothing made by them.
func TestCompatRefusedRequests(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", ref, "sleep", "60")
	execID := execCreate(t, d, id)
	before := dockerOK(t, d, "ps", "-aq", "--no-trunc")
	create := func(hostConfig string) string {
		return `{"Image":"` + ref + `","HostConfig":` + hostConfig + `}`
	}
	for _, tc := range []struct {
		method, path, body string
		header             map[string]string
		code               int
		msg                string // the whole message
	}{
		// The terminal sizes: strconv's reason only.
		{method: "POST", path: "/containers/" + id + "/resize?w=100", code: 400, msg: `invalid resize height "": invalid syntax`},
		{method: "POST", path: "/containers/" + id + "/resize?h=-100&w=100", code: 400, msg: `invalid resize height "-100": value out of range`},
		{method: "POST", path: "/containers/" + id + "/resize?h=100&w=4294967296", code: 400, msg: `invalid resize width "4294967296": value out of range`},
		{method: "POST", path: "/exec/" + execID + "/resize?h=not-a-number&w=100", code: 400, msg: `invalid resize height "not-a-number": invalid syntax`},
		{method: "POST", path: "/exec/" + execID + "/resize?h=100&w=-1", code: 400, msg: `invalid resize width "-1": value out of range`},
		// Checkpoints: a bad name before the container is looked for;
		// hutch restores none.
		{method: "POST", path: "/containers/missing/start?checkpoint=..%2Foutside", code: 400, msg: `invalid checkpoint ID "../outside", only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`},
		{method: "POST", path: "/containers/" + id + "/start?checkpoint=cp1", code: 400, msg: "checkpoint is only supported in experimental mode, which hutch does not have"},
		{method: "GET", path: "/containers/" + id + "/checkpoints", code: 501, msg: "hutch does not support checkpoints (Docker's experimental checkpoint and restore)"},
		// A BuildKit session opens only with an upgrade to h2c.
		{method: "POST", path: "/session", code: 400, msg: "no upgrade proto in request"},
		{method: "POST", path: "/session", header: map[string]string{"Upgrade": "foo", "Connection": "Upgrade"}, code: 400, msg: "protocol foo not supported"},
		// Create.
		{method: "POST", path: "/containers/create", code: 400, msg: "invalid JSON: EOF"},
		{method: "POST", path: "/containers/create", body: create(`{"RestartPolicy":{"Name":"something"}}`), code: 400,
			msg: "invalid restart policy: unknown policy 'something'; use one of 'no', 'always', 'on-failure', or 'unless-stopped'"},
		{method: "POST", path: "/containers/create", body: create(`{"RestartPolicy":{"Name":"on-failure","MaximumRetryCount":-2}}`), code: 400,
			msg: "invalid restart policy: maximum retry count cannot be negative"},
		{method: "POST", path: "/containers/create", body: create(`{"RestartPolicy":{"Name":"always","MaximumRetryCount":2}}`), code: 400,
			msg: "invalid restart policy: maximum retry count can only be used with 'on-failure'"},
		{method: "POST", path: "/containers/create", body: create(`{"VolumesFrom":["nosuchcontainer"]}`), code: 400, msg: "No such container: nosuchcontainer"},
		{method: "POST", path: "/containers/create", body: create(`{"UTSMode":"invalid"}`), code: 400, msg: "invalid UTS mode: invalid"},
		{method: "POST", path: "/containers/create", body: create(`{"Annotations":{"":"a"}}`), code: 400,
			msg: "invalid Annotations: the empty string is not permitted as an annotation key"},
		{method: "POST", path: "/containers/create?platform=linuxDifferentOS%2F" + runtime.GOARCH, body: `{"Image":"` + ref + `"}`, code: 404,
			msg: "image with reference " + ref + " was found but its platform (linux/" + runtime.GOARCH + ") does not match the specified platform (linuxdifferentos/" + runtime.GOARCH + ")"},
		// A file named as a directory: lstat's "not a directory", as
		// Docker answers it (unclassed: 500).
		{method: "GET", path: "/containers/" + id + "/archive?path=%2Fetc%2Fpasswd%2F", code: 500, msg: "lstat /etc/passwd/: not a directory"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://hutch/v1.52"+tc.path, strings.NewReader(tc.body))
			if tc.method == "POST" && strings.HasPrefix(tc.path, "/containers/create") {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := unixHTTPClient(d.Socket).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if want := `{"message":` + jsonString(tc.msg) + "}\n"; resp.StatusCode != tc.code || string(b) != want {
				t.Errorf("= %d %s, want %d %s", resp.StatusCode, b, tc.code, want)
			}
		})
	}
	if after := dockerOK(t, d, "ps", "-aq", "--no-trunc"); after != before {
		t.Errorf("containers before %q, after %q", before, after)
	}
	// The platform the image is for is no obstacle.
	if out, err := d.Docker(t, "create", "--platform", "linux/"+runtime.GOARCH, ref); err != nil {
		t.Errorf("create for the image's own platform: %v %s", err, out)
	}
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// execCreate makes an exec instance in the running container id.
func execCreate(t *testing.T, d *daemon, id string) string {
	t.Helper()
	res, err := d.Client(t).ExecCreate(context.Background(), id, client.ExecCreateOptions{Cmd: []string{"true"}, TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// docker ps --filter annotation=…: HostConfig.Annotations by key or
// key=value, as Docker filters them.
func TestCompatAnnotationFilter(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	mk := func(annotations map[string]string) string {
		res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &containertypes.Config{Image: ref},
			HostConfig: &containertypes.HostConfig{Annotations: annotations},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	annotated := mk(map[string]string{"com.example.key": "value"})
	plain := mk(nil)
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{"com.example.key", []string{annotated}},
		{"com.example.key=value", []string{annotated}},
		{"com.example.key=other", nil},
		{"com.example.other", nil},
	} {
		list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("annotation", tc.filter)})
		if err != nil {
			t.Fatalf("annotation=%s: %v", tc.filter, err)
		}
		var got []string
		for _, s := range list.Items {
			got = append(got, s.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("annotation=%s lists %v, want %v (plain is %s)", tc.filter, got, tc.want, plain)
		}
	}
	insp, err := c.ContainerInspect(ctx, annotated, client.ContainerInspectOptions{})
	if err != nil || insp.Container.HostConfig.Annotations["com.example.key"] != "value" {
		t.Errorf("inspect: %v %+v", err, insp.Container.HostConfig)
	}
}

// GET archive of a path whose last element is ".": the directory's
// content, its entries named "./…", whatever the path's form.
func TestCompatCopyDotPaths(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", ref, "sh", "-c",
		"mkdir -p /bar/quux && echo world > /bar/quux/baz && ln -s quux /bar/dirsymlink && ln -s quux/baz /bar/filesymlink && echo ready && sleep 60")
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	c := d.Client(t)
	entries := func(p string) []string {
		t.Helper()
		res, err := c.CopyFromContainer(context.Background(), id, client.CopyFromContainerOptions{SourcePath: p})
		if err != nil {
			t.Fatalf("archive %s: %v", p, err)
		}
		defer res.Content.Close()
		var names []string
		tr := tar.NewReader(res.Content)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("archive %s: %v", p, err)
			}
			names = append(names, h.Name)
		}
		sort.Strings(names)
		return names
	}
	want := "./ ./baz"
	for _, p := range []string{"/bar/quux/.", "bar/quux/./", "/bar/dirsymlink/.", "/bar/dirsymlink/./"} {
		if got := strings.Join(entries(p), " "); got != want {
			t.Errorf("archive %s = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"./", "/./", "."} {
		got := entries(p)
		for _, n := range []string{"./", "./bar/quux/baz", "./bar/filesymlink", "./bar/dirsymlink"} {
			if i := sort.SearchStrings(got, n); i == len(got) || got[i] != n {
				t.Errorf("archive %s has no %s", p, n)
			}
		}
	}
	if got := strings.Join(entries("/bar/quux/"), " "); got != "quux/ quux/baz" {
		t.Errorf("archive /bar/quux/ = %q", got)
	}
}

// docker update of a --rm container's restart policy conflicts with it,
// as in Docker (409), and changes nothing.
func TestCompatUpdateAutoRemoveConflict(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", "--rm", ref, "sleep", "60")
	c := d.Client(t)
	_, err := c.ContainerUpdate(context.Background(), id, client.ContainerUpdateOptions{
		RestartPolicy: &containertypes.RestartPolicy{Name: "always"},
	})
	want := "Cannot update container " + id + ": Restart policy cannot be updated because AutoRemove is enabled for the container"
	if !cerrdefs.IsConflict(err) || err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("update: %v, want a conflict %q", err, want)
	}
	if got := dockerOK(t, d, "inspect", "-f", "{{.HostConfig.RestartPolicy.Name}}", id); got != "no" && got != "" {
		t.Errorf("restart policy after the refused update: %q", got)
	}
}

// A probe killed at its timeout keeps what it wrote, as Docker reports it.
func TestCompatHealthTimeoutKeepsOutput(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Cmd: []string{"sleep", "60"}, Healthcheck: &containertypes.HealthConfig{
			Test:     []string{"CMD", "sh", "-c", `echo "logs1 logs2 logs3"; sleep 60`},
			Interval: time.Second,
			Timeout:  time.Second,
			Retries:  1,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var output string
	waitFor(t, func() bool {
		insp, err := c.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
		if err != nil || insp.Container.State.Health == nil || len(insp.Container.State.Health.Log) == 0 {
			return false
		}
		output = insp.Container.State.Health.Log[0].Output
		return true
	})
	if want := "Health check exceeded timeout (1s): logs1 logs2 logs3\n"; output != want {
		t.Errorf("first probe's output = %q, want %q", output, want)
	}
}
