//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// The image endpoints against the real daemon, driven by the docker CLI and
// the Go SDK: pull with progress and login, list, inspect, history, tag,
// rmi, the bad inputs and a pull failing mid-way (images_io_test.go has
// import, save/load and prune).

// dockerCfg runs the docker CLI with configDir as DOCKER_CONFIG, so that
// `docker login` state carries over between calls, and stdin as input.
func dockerCfg(t *testing.T, d *daemon, configDir, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dockerCLI(t), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+configDir)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs the docker CLI and fails the test on error.
func must(t *testing.T, d *daemon, args ...string) string {
	t.Helper()
	out, err := d.Docker(t, args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s\n--- daemon log ---\n%s", strings.Join(args, " "), err, out, d.Log())
	}
	return strings.TrimSpace(out)
}

// rawDo sends one request over the socket with headers and a body.
func rawDo(t *testing.T, d *daemon, method, path string, hdr map[string]string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://hutch"+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := unixHTTPClient(d.Socket)
	hc.Timeout = time.Minute
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestImagePullProgress(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()
	resp, err := c.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jsonstream.Message
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			t.Fatalf("pull stream: %v", err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) < 4 || msgs[0].Status != "Pulling from library/busybox" || msgs[0].ID != "latest" {
		t.Fatalf("stream starts with %+v", msgs)
	}
	downloading := false
	for _, m := range msgs {
		if m.Status == "Downloading" && m.Progress != nil && m.Progress.Total > 0 && m.Progress.Current > 0 && len(m.ID) == 12 {
			downloading = true
		}
	}
	if !downloading {
		t.Errorf("no Downloading message with progressDetail: %+v", msgs)
	}
	last := msgs[len(msgs)-2:]
	if !strings.HasPrefix(last[0].Status, "Digest: sha256:") || last[1].Status != "Status: Downloaded newer image for "+ref {
		t.Errorf("stream ends with %+v", last)
	}

	// The CLI prints the same ending; a second pull is up to date.
	out := lines(must(t, d, "pull", ref))
	if n := len(out); n < 3 || !strings.HasPrefix(out[n-3], "Digest: sha256:") || out[n-2] != "Status: Image is up to date for "+ref || out[n-1] != ref {
		t.Errorf("docker pull output:\n%s", strings.Join(out, "\n"))
	}
	if info := must(t, d, "info", "--format", "{{.Images}}"); info != "1" {
		t.Errorf("docker info Images = %q, want 1", info)
	}
}

// privateBusybox starts a registry with htpasswd auth (user hutch,
// password s3cret) and pushes the busybox test image to it.
func privateBusybox(t *testing.T) (reg *registry, ref string) {
	t.Helper()
	reg = startRegistry(t, "hutch", "s3cret")
	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref = reg.Addr + "/private/busybox:1"
	if err := testimage.Push(context.Background(), ref, img, testimage.WithBasicAuth("hutch", "s3cret")); err != nil {
		t.Fatal(err)
	}
	return reg, ref
}

func TestImageLoginAndPull(t *testing.T) {
	reg, ref := privateBusybox(t)
	d := startDaemon(t)
	cfg := t.TempDir()

	if out, err := dockerCfg(t, d, cfg, "", "pull", ref); err == nil || !strings.Contains(out, "authentication required") {
		t.Errorf("pull without login: %v\n%s", err, out)
	}
	out, err := dockerCfg(t, d, cfg, "wrong\n", "login", reg.Addr, "-u", "hutch", "--password-stdin")
	if err == nil || !strings.Contains(out, "Error response from daemon: login attempt to http://"+reg.Addr+"/v2/ failed with status: 401 Unauthorized") {
		t.Errorf("login with a wrong password: %v\n%s", err, out)
	}
	out, err = dockerCfg(t, d, cfg, "s3cret\n", "login", reg.Addr, "-u", "hutch", "--password-stdin")
	if err != nil || !strings.Contains(out, "Login Succeeded") {
		t.Fatalf("login: %v\n%s\n%s", err, out, d.Log())
	}
	out, err = dockerCfg(t, d, cfg, "", "pull", ref)
	if err != nil || !strings.Contains(out, "Status: Downloaded newer image for "+ref) {
		t.Fatalf("pull after login: %v\n%s\n%s", err, out, d.Log())
	}
	if strings.Contains(d.Log(), "s3cret") {
		t.Error("the daemon logged the password")
	}

	// The SDK sees the classes: 401 for rejected credentials.
	c := d.Client(t)
	_, err = c.RegistryLogin(context.Background(), client.RegistryLoginOptions{Username: "hutch", Password: "nope", ServerAddress: reg.Addr})
	if !errdefs.IsUnauthorized(err) {
		t.Errorf("SDK login with a wrong password = %v, want unauthorized", err)
	}
	res, err := c.RegistryLogin(context.Background(), client.RegistryLoginOptions{Username: "hutch", Password: "s3cret", ServerAddress: reg.Addr})
	if err != nil || res.Auth.Status != "Login Succeeded" {
		t.Errorf("SDK login = %+v, %v", res, err)
	}
}

func TestImageListInspectHistoryTag(t *testing.T) {
	d, ref := pulled(t)
	id := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	if !strings.HasPrefix(id, "sha256:") || len(id) != 71 {
		t.Fatalf("inspect Id = %q", id)
	}
	repo := strings.TrimSuffix(ref, ":latest")
	if got := must(t, d, "images", "--format", "{{.Repository}} {{.Tag}} {{.ID}}"); got != repo+" latest "+id[7:19] {
		t.Errorf("docker images = %q", got)
	}
	insp := must(t, d, "image", "inspect", "--format", "{{.Os}} {{.Architecture}} {{.RootFS.Type}} {{len .RootFS.Layers}} {{.Config.Cmd}} {{index .RepoTags 0}} {{.GraphDriver.Name}}", ref)
	if !strings.HasPrefix(insp, "linux ") || !strings.Contains(insp, " layers 1 [sh] "+ref+" ") {
		t.Errorf("inspect = %q", insp)
	}
	if digests := must(t, d, "image", "inspect", "--format", "{{json .RepoDigests}}", ref); !strings.Contains(digests, repo+"@sha256:") {
		t.Errorf("RepoDigests = %s", digests)
	}
	hist := lines(must(t, d, "history", "--no-trunc", "--format", "{{.ID}}|{{.CreatedBy}}|{{.Size}}", ref))
	if len(hist) != 1 || !strings.HasPrefix(hist[0], id+"|hutch testimage|") {
		t.Errorf("history = %q", hist)
	}

	must(t, d, "tag", ref, "mine/bb:v1")
	must(t, d, "tag", id[7:19], "other:2")
	got := lines(must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}"))
	slices.Sort(got)
	if want := []string{repo + ":latest", "mine/bb:v1", "other:2"}; !slices.Equal(got, want) {
		t.Errorf("images after tag = %q, want %q", got, want)
	}
	if out := must(t, d, "images", "--filter", "reference=mine/*", "--format", "{{.Repository}}:{{.Tag}}"); out != "mine/bb:v1" {
		t.Errorf("reference filter = %q", out)
	}
	if out := must(t, d, "images", "-q", "--filter", "dangling=true"); out != "" {
		t.Errorf("dangling = %q", out)
	}
	if out := must(t, d, "image", "inspect", "--format", "{{.Metadata.LastTagTime.IsZero}}", "mine/bb:v1"); out != "false" {
		t.Errorf("LastTagTime not set after tag: %s", out)
	}

	// The SDK's view: list fields and history.
	c := d.Client(t)
	list, err := c.ImageList(context.Background(), client.ImageListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("ImageList = %+v, %v", list, err)
	}
	s := list.Items[0]
	if s.ID != id || s.Size <= 0 || s.Created != testimage.Epoch.Unix() || len(s.RepoTags) != 3 || !slices.Contains(s.RepoDigests, "other@"+id) || len(s.RepoDigests) != 3 || s.Containers != 0 || s.SharedSize != -1 {
		t.Errorf("summary = %+v", s)
	}
	h, err := c.ImageHistory(context.Background(), ref)
	if err != nil || len(h.Items) != 1 || h.Items[0].ID != id || len(h.Items[0].Tags) != 3 || h.Items[0].Size != s.Size {
		t.Errorf("history = %+v, %v", h, err)
	}
	// Names with slashes and IDs route to the right endpoint.
	for _, name := range []string{ref, id, id[7:19], "mine/bb:v1"} {
		if code, body := rawDo(t, d, "GET", "/v1.50/images/"+name+"/json", nil, nil); code != 200 || !strings.Contains(body, `"Id":"`+id+`"`) {
			t.Errorf("inspect %s = %d %s", name, code, body)
		}
	}
}

func TestImageRemove(t *testing.T) {
	d, ref := pulled(t)
	id := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	short := id[7:19]
	must(t, d, "tag", ref, "second:1")
	if out := must(t, d, "rmi", "second:1"); out != "Untagged: second:1" {
		t.Errorf("rmi of one of two tags = %q", out)
	}

	// A container made from it blocks the untag of its last name.
	cid := must(t, d, "create", ref, "true")
	out, err := d.Docker(t, "rmi", ref)
	want := `conflict: unable to remove repository reference "` + ref + `" (must force) - container ` + cid[:12] + " is using its referenced image " + short
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("rmi with a container = %v\n%s\nwant %s", err, out, want)
	}
	code, body := rawDo(t, d, "DELETE", "/images/"+ref, nil, nil)
	var e struct{ Message string }
	json.Unmarshal([]byte(body), &e)
	if code != http.StatusConflict || e.Message != want {
		t.Errorf("DELETE with a container = %d %s", code, body)
	}
	// Two repositories: deleting by ID must be forced.
	must(t, d, "tag", ref, "second:1")
	out, err = d.Docker(t, "rmi", short)
	if want := "conflict: unable to delete " + short + " (must be forced) - image is referenced in multiple repositories"; err == nil || !strings.Contains(out, want) {
		t.Errorf("rmi by ID with two repositories = %v\n%s", err, out)
	}
	must(t, d, "rm", cid)
	must(t, d, "rmi", "second:1")

	// A running container: not even -f deletes it.
	rid := must(t, d, "run", "-d", ref, "sleep", "60")
	out, err = d.Docker(t, "rmi", "-f", short)
	if want := "conflict: unable to delete " + short + " (cannot be forced) - image is being used by running container " + rid[:12]; err == nil || !strings.Contains(out, want) {
		t.Errorf("rmi -f with a running container = %v\n%s", err, out)
	}
	must(t, d, "rm", "-f", rid)

	// The last name goes with the image and its layer.
	res, err := d.Client(t).ImageRemove(context.Background(), ref, client.ImageRemoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var untagged, deleted []string
	for _, it := range res.Items {
		if it.Untagged != "" {
			untagged = append(untagged, it.Untagged)
		}
		if it.Deleted != "" {
			deleted = append(deleted, it.Deleted)
		}
	}
	if len(untagged) != 2 || untagged[0] != ref || !strings.Contains(untagged[1], "@sha256:") || len(deleted) != 2 || deleted[0] != id {
		t.Errorf("remove = untagged %q deleted %q", untagged, deleted)
	}
	if out := must(t, d, "images", "-q"); out != "" {
		t.Errorf("images left: %q", out)
	}
	if out, err := d.Docker(t, "rmi", ref); err == nil || !strings.Contains(out, "No such image: "+ref) {
		t.Errorf("second rmi = %v %s", err, out)
	}
}

func TestImageBadInput(t *testing.T) {
	d, ref := pulled(t)
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		status             int
		message            string
	}{
		{"inspect bad reference", "GET", "/images/UPPER/json", nil, 400, "invalid reference format"},
		{"pull bad reference", "POST", "/images/create?fromImage=UPPER", nil, 400, "invalid reference format"},
		{"pull bad tag", "POST", "/images/create?fromImage=busybox&tag=" + url.QueryEscape("a b"), nil, 400, "invalid tag format"},
		{"pull bad auth header", "POST", "/images/create?fromImage=" + url.QueryEscape(ref), map[string]string{"X-Registry-Auth": "!!!not-base64!!!"}, 400, "invalid X-Registry-Auth header"},
		{"missing image", "GET", "/images/nosuch/json", nil, 404, "No such image: nosuch"},
		{"missing history", "GET", "/images/nosuch:2/history", nil, 404, "No such image: nosuch:2"},
		{"delete missing", "DELETE", "/images/nosuch", nil, 404, "No such image: nosuch"},
		{"tag to invalid repo", "POST", "/images/" + ref + "/tag?repo=UPPER", nil, 400, "invalid reference format"},
		{"tag to invalid tag", "POST", "/images/" + ref + "/tag?repo=ok&tag=" + url.QueryEscape("bad tag"), nil, 400, "invalid tag format"},
		{"tag of missing image", "POST", "/images/nosuch/tag?repo=x", nil, 404, "No such image: nosuch"},
		{"unknown image operation", "GET", "/images/" + ref + "/nope", nil, 404, "page not found"},
		{"list bad filter", "GET", "/images/json?filters=" + url.QueryEscape(`{"dangling":["maybe"]}`), nil, 400, "invalid filter 'dangling=maybe'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader("garbage")
			}
			code, resp := rawDo(t, d, tc.method, tc.path, tc.hdr, body)
			var e struct{ Message string }
			json.Unmarshal([]byte(resp), &e)
			if code != tc.status || !strings.Contains(e.Message, tc.message) {
				t.Errorf("%s %s = %d %s, want %d %q", tc.method, tc.path, code, resp, tc.status, tc.message)
			}
		})
	}
	if out, err := d.Docker(t, "pull", "UPPER"); err == nil || !strings.Contains(out, "invalid reference format") {
		t.Errorf("docker pull UPPER: %v %s", err, out)
	}
}

// storeLayers lists the image layers of the daemon's store, from the
// layer records and from the driver's directory. The writable layers of
// containers/storage's containers (the containers' own and the pool's
// spares, made and emptied in the background) are left out; they are
// read after the layers, so only a writable layer being made at that
// moment (its layer there, its container record not yet) can be listed:
// compare with sameStoreLayers.
func storeLayers(t *testing.T, d *daemon) []string {
	t.Helper()
	graph := filepath.Join(d.Data, "hutch", "storage")
	var out []string
	recs, _ := filepath.Glob(filepath.Join(graph, "*-layers", "layers.json"))
	for _, p := range recs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ls []struct{ ID string }
		if len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, &ls); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		for _, l := range ls {
			out = append(out, "record:"+l.ID)
		}
	}
	for _, driver := range []string{"overlay", "vfs/dir"} {
		entries, _ := os.ReadDir(filepath.Join(graph, driver))
		for _, e := range entries {
			if e.IsDir() && len(e.Name()) == 64 { // layer directories, not "l" or "tempdirs"
				out = append(out, driver+":"+e.Name())
			}
		}
	}
	if len(recs) == 0 {
		t.Fatalf("no layer records under %s: the store layout changed", graph)
	}
	writable := map[string]bool{}
	for _, c := range storageContainers(t, d) {
		writable[c.Layer] = true
	}
	out = slices.DeleteFunc(out, func(l string) bool {
		_, id, _ := strings.Cut(l, ":")
		return writable[id]
	})
	slices.Sort(out)
	return out
}

// sameStoreLayers waits (up to 5 s) for storeLayers to list want, and
// returns the last list: a writable layer being made in the background
// shows for a moment.
func sameStoreLayers(t *testing.T, d *daemon, want []string) []string {
	t.Helper()
	got := storeLayers(t, d)
	for deadline := time.Now().Add(5 * time.Second); !slices.Equal(got, want) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		got = storeLayers(t, d)
	}
	return got
}

// breakingProxy serves registryAddr's API but cuts the connection halfway
// through the blob with digest blob, as a registry failing mid-pull.
func breakingProxy(t *testing.T, registryAddr, blob string) string {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: registryAddr}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+blob) {
			proxy.ServeHTTP(w, r)
			return
		}
		resp, err := http.Get(target.String() + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Length", resp.Header.Get("Content-Length"))
		w.Header().Set("Docker-Content-Digest", blob)
		w.WriteHeader(http.StatusOK)
		io.CopyN(w, resp.Body, resp.ContentLength/2)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestImagePullFailsMidway(t *testing.T) {
	busybox(t) // starts the shared registry
	img, err := testimage.MultiLayer(3)
	if err != nil {
		t.Fatal(err)
	}
	last := pushForLastLayer(t, img, shared.Addr+"/library/multi:broken")
	ref := breakingProxy(t, shared.Addr, last.String()) + "/library/multi:broken"
	d := startDaemon(t)

	// The SDK sees the failure as the stream's error, after progress.
	resp, err := d.Client(t).ImagePull(context.Background(), ref, client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Wait(context.Background()); err == nil {
		t.Fatal("a pull with a broken blob succeeded")
	}
	out, err := d.Docker(t, "pull", ref)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(out, "Pulling fs layer") {
		t.Errorf("docker pull of a broken image: %v\n%s", err, out)
	}
	if got := must(t, d, "images", "-qa"); got != "" {
		t.Errorf("images after a failed pull: %q", got)
	}
	if got := storeLayers(t, d); len(got) != 0 {
		t.Errorf("layers after a failed pull: %q", got)
	}
}
