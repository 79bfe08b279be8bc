//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// docker commit, diff and export against the real daemon, driven by the
// docker CLI, the Go SDK and raw HTTP as Docker's API documentation shows (push_test.go
// has docker push).

// madeContainer runs a stopped container that wrote /file and deleted
// /etc/group, and returns its name.
func madeContainer(t *testing.T, d *daemon, ref, name string) {
	t.Helper()
	must(t, d, "run", "--name", name, ref, "sh", "-c", "echo hello > /file && rm /etc/group")
}

func TestCommit(t *testing.T) {
	d, ref := pulled(t)
	baseID := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	madeContainer(t, d, ref, "c1")

	// docker diff shows the container's changes, not the mount points the
	// runtime made (/proc, /etc/hosts…).
	if got, want := lines(must(t, d, "diff", "c1")), []string{"C /etc", "D /etc/group", "A /file"}; !slices.Equal(got, want) {
		t.Errorf("docker diff = %q, want %q", got, want)
	}

	id := must(t, d, "commit", "c1", "mine/c:1")
	if !strings.HasPrefix(id, "sha256:") || len(id) != 71 {
		t.Fatalf("docker commit = %q", id)
	}
	if out := must(t, d, "run", "--rm", "mine/c:1", "cat", "/file"); out != "hello" {
		t.Errorf("cat /file in the committed image = %q", out)
	}
	if out := must(t, d, "run", "--rm", "mine/c:1", "sh", "-c", "test -e /etc/group || echo gone; test -e /etc/passwd && echo kept"); out != "gone\nkept" {
		t.Errorf("the deleted file in the committed image: %q", out)
	}
	insp := must(t, d, "image", "inspect", "--format", "{{.Parent}} {{json .Config.Cmd}} {{len .RootFS.Layers}}", "mine/c:1")
	if want := baseID + ` ["sh","-c","echo hello > /file && rm /etc/group"] 2`; insp != want {
		t.Errorf("inspect = %q, want %q", insp, want)
	}

	// -c, -m and -a.
	id2 := must(t, d, "commit", "-c", `CMD ["echo","hi"]`, "-c", "ENV A=b", "-c", "EXPOSE 8080", "-c", "LABEL team=hutch", "-c", "WORKDIR /srv",
		"-m", "my message", "-a", "Me <me@example.com>", "c1", "mine/c:2")
	if id2 == id {
		t.Errorf("two commits gave one image %s", id)
	}
	if out := must(t, d, "run", "--rm", "mine/c:2"); out != "hi" {
		t.Errorf("the committed CMD printed %q", out)
	}
	if out := must(t, d, "run", "--rm", "mine/c:2", "sh", "-c", "echo $A $(pwd)"); out != "b /srv" {
		t.Errorf("ENV and WORKDIR in the committed image: %q", out)
	}
	insp = must(t, d, "image", "inspect", "--format", "{{json .Config.Cmd}}|{{json .Config.ExposedPorts}}|{{.Config.Labels.team}}|{{.Author}}|{{.Comment}}|{{.Parent}}", "mine/c:2")
	if want := `["echo","hi"]|{"8080/tcp":{}}|hutch|Me <me@example.com>|my message|` + baseID; insp != want {
		t.Errorf("inspect = %q, want %q", insp, want)
	}
	if env := must(t, d, "image", "inspect", "--format", "{{json .Config.Env}}", "mine/c:2"); !strings.Contains(env, `"A=b"`) || !strings.Contains(env, `"PATH=`) {
		t.Errorf("Env = %s", env)
	}
	hist := lines(must(t, d, "history", "--no-trunc", "--format", "{{.ID}}|{{.CreatedBy}}|{{.Comment}}", "mine/c:2"))
	if len(hist) != 2 || hist[0] != id2+"|sh -c echo hello > /file && rm /etc/group|my message" || !strings.HasPrefix(hist[1], baseID+"|") {
		t.Errorf("history = %q", hist)
	}

	// The image list shows the parent (the Go SDK reads ParentId).
	list, err := d.Client(t).ImageList(context.Background(), client.ImageListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	for _, s := range list.Items {
		parents[s.ID] = s.ParentID
	}
	if parents[id] != baseID || parents[id2] != baseID || parents[baseID] != "" {
		t.Errorf("ParentIds = %v (base %s)", parents, baseID)
	}

	// Bad input.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"commit", "-c", "RUN make", "c1"}, "run is not a valid change command"},
		{[]string{"commit", "-c", "EXPOSE x", "c1"}, "invalid port"},
		{[]string{"commit", "c1", "UPPER"}, "invalid reference format"},
		{[]string{"commit", "nope"}, "No such container: nope"},
	} {
		if out, err := d.Docker(t, tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("docker %s = %v %q, want an error with %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}

// docker diff through the Go SDK: Docker's kinds (0 modified, 1 added, 2
// deleted), and nothing for a container that changed nothing, whatever
// mount points the runtime made in its rootfs.
func TestDiff(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	must(t, d, "run", "--name", "quiet", "--init", ref, "true")
	if res, err := c.ContainerDiff(ctx, "quiet", client.ContainerDiffOptions{}); err != nil || len(res.Changes) != 0 {
		t.Errorf("diff of a container that changed nothing = %+v, %v", res.Changes, err)
	}
	if out := must(t, d, "diff", "quiet"); out != "" {
		t.Errorf("docker diff of a container that changed nothing = %q", out)
	}

	must(t, d, "run", "--name", "busy", ref, "sh", "-c", "echo x >> /etc/passwd; mkdir /d; touch /d/f; rm /bin/ls")
	res, err := c.ContainerDiff(ctx, "busy", client.ContainerDiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range res.Changes {
		got = append(got, fmt.Sprintf("%d %s", ch.Kind, ch.Path))
	}
	if want := []string{"0 /bin", "2 /bin/ls", "1 /d", "1 /d/f", "0 /etc", "0 /etc/passwd"}; !slices.Equal(got, want) {
		t.Errorf("changes = %q, want %q", got, want)
	}
	if _, err := c.ContainerDiff(ctx, "nope", client.ContainerDiffOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("diff of a missing container: %v", err)
	}
}

// A running container is committed while it runs (rootless containers on
// cgroup v1 have no freezer to pause it: the commit goes on without).
func TestCommitRunning(t *testing.T) {
	d, ref := pulled(t)
	must(t, d, "run", "-d", "--name", "r1", ref, "sleep", "1000")
	must(t, d, "exec", "r1", "sh", "-c", "echo running > /state")
	for _, pause := range []string{"--pause=true", "--pause=false"} {
		id := must(t, d, "commit", pause, "r1", "running:1")
		if !strings.HasPrefix(id, "sha256:") {
			t.Fatalf("docker commit %s = %q", pause, id)
		}
		if st := must(t, d, "inspect", "--format", "{{.State.Status}}", "r1"); st != "running" {
			t.Errorf("after commit %s the container is %s", pause, st)
		}
		if out := must(t, d, "run", "--rm", "running:1", "cat", "/state"); out != "running" {
			t.Errorf("cat /state = %q", out)
		}
		if got := lines(must(t, d, "diff", "r1")); !slices.Contains(got, "A /state") {
			t.Errorf("docker diff of the running container = %q", got)
		}
	}
	must(t, d, "rm", "-f", "r1")
}

// The Engine API's commit: a 12-character ID prefix and repo, answered
// with {"Id":"sha256:…"}, and the list then shows its ParentId.
func TestCommitRawAPI(t *testing.T) {
	d, ref := pulled(t)
	baseID := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	cid := must(t, d, "create", ref, "sh", "-c", "echo guide > /file")
	must(t, d, "start", "-a", cid)

	code, body := rawDo(t, d, "POST", "/v1.41/commit?container="+cid[:12]+"&repo=guide-image", nil, nil)
	var resp struct{ Id string }
	if code != 201 || json.Unmarshal([]byte(body), &resp) != nil || !strings.HasPrefix(resp.Id, "sha256:") || len(resp.Id) != 71 {
		t.Fatalf("commit = %d %s", code, body)
	}
	code, body = rawDo(t, d, "GET", "/v1.41/images/json", nil, nil)
	var list []struct {
		Id, ParentId string
		RepoTags     []string
	}
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("images = %d %s", code, body)
	}
	found := false
	for _, img := range list {
		if img.Id == resp.Id {
			found = true
			if img.ParentId != baseID || !slices.Equal(img.RepoTags, []string{"guide-image:latest"}) {
				t.Errorf("committed image in the list: %+v (base %s)", img, baseID)
			}
		}
	}
	if !found {
		t.Errorf("committed image %s not in the list %s", resp.Id, body)
	}

	// A second commit is a second image; a body config replaces the
	// container's command.
	code, body = rawDo(t, d, "POST", "/v1.41/commit?container="+cid[:12]+"&repo=guide-image&tag=2",
		map[string]string{"Content-Type": "application/json"}, strings.NewReader(`{"Cmd":["cat","/file"]}`))
	var resp2 struct{ Id string }
	if code != 201 || json.Unmarshal([]byte(body), &resp2) != nil || resp2.Id == resp.Id {
		t.Fatalf("second commit = %d %s (first %s)", code, body, resp.Id)
	}
	if out := must(t, d, "run", "--rm", "guide-image:2"); out != "guide" {
		t.Errorf("the body's Cmd printed %q", out)
	}

	for _, tc := range []struct {
		query   string
		code    int
		message string
	}{
		{"container=nope", 404, "No such container: nope"},
		{"container=" + cid[:12] + "&repo=UPPER", 400, "invalid reference format"},
		{"container=" + cid[:12] + "&repo=x&tag=a:b", 400, "invalid tag format"},
		{"container=" + cid[:12] + "&changes=FROM+x", 400, "from is not a valid change command"},
	} {
		code, body := rawDo(t, d, "POST", "/v1.41/commit?"+tc.query, nil, nil)
		if code != tc.code || !strings.Contains(body, tc.message) {
			t.Errorf("commit?%s = %d %s, want %d %q", tc.query, code, body, tc.code, tc.message)
		}
	}

	// The Go SDK commits by ID prefix too.
	res, err := d.Client(t).ContainerCommit(context.Background(), cid[:12], client.ContainerCommitOptions{Reference: "sdk-image:1", Comment: "from the SDK"})
	if err != nil || !strings.HasPrefix(res.ID, "sha256:") {
		t.Errorf("SDK commit = %+v, %v", res, err)
	}
	if _, err := d.Client(t).ContainerCommit(context.Background(), "nope", client.ContainerCommitOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("SDK commit of a missing container: %v", err)
	}
}

func TestExport(t *testing.T) {
	d, ref := pulled(t)
	madeContainer(t, d, ref, "e1")
	dir := t.TempDir()
	archive := filepath.Join(dir, "e1.tar")
	must(t, d, "export", "-o", archive, "e1")
	out, err := exec.Command("tar", "-tf", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -t: %v\n%s", err, out)
	}
	names := lines(string(out))
	for _, want := range []string{"bin/", "bin/busybox", "bin/sh", "etc/passwd", "file", "home/user/.profile"} {
		if !slices.Contains(names, want) {
			t.Errorf("export lacks %s: %q", want, names)
		}
	}
	for _, name := range names {
		if name == "etc/group" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "./") {
			t.Errorf("unexpected entry %q", name)
		}
	}
	if body, err := exec.Command("tar", "-xOf", archive, "file").Output(); err != nil || string(body) != "hello\n" {
		t.Errorf("file in the export = %q, %v", body, err)
	}

	// A running container exports too; a missing one is a 404.
	must(t, d, "run", "-d", "--name", "e2", ref, "sleep", "1000")
	must(t, d, "export", "-o", filepath.Join(dir, "e2.tar"), "e2")
	if fi, err := os.Stat(filepath.Join(dir, "e2.tar")); err != nil || fi.Size() < 1<<20 {
		t.Errorf("export of a running container: %v, %v", fi, err)
	}
	must(t, d, "rm", "-f", "e2")
	if code, body := rawDo(t, d, "GET", "/containers/nope/export", nil, nil); code != 404 || !strings.Contains(body, "No such container: nope") {
		t.Errorf("export of a missing container = %d %s", code, body)
	}
}
