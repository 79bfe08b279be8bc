//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// docker save and docker load as Docker Engine 29 does them (moby's
// integration/image save and load tests), through the docker CLI and the
// Go SDK.

// loadStream posts archive to /images/load and returns the status, the
// Content-Type and the stream's messages.
func loadStream(t *testing.T, d *daemon, query string, archive []byte) (int, string, []jsonstream.Message) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://hutch/images/load"+query, bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := unixHTTPClient(d.Socket).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var msgs []jsonstream.Message
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			break
		}
		msgs = append(msgs, m)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), msgs
}

// TestCompatImageLoadErrors: an archive that cannot be loaded is answered
// 200 with the error in the stream, quiet or not, and stores nothing; a
// load that is not quiet reports each layer it stores as "Loading layer".
func TestCompatImageLoadErrors(t *testing.T) {
	d, ref := pulled(t)
	id := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	layer := must(t, d, "image", "inspect", "--format", "{{index .RootFS.Layers 0}}", ref)
	path := filepath.Join(t.TempDir(), "busybox.tar")
	must(t, d, "save", "-o", path, ref)
	archive, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string { return slices.Compact(lines(must(t, d, "images", "-qa", "--no-trunc"))) }

	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"garbage", []byte("garbage")},
		{"truncated", archive[:len(archive)/2]},
		{"empty", nil},
	} {
		for _, query := range []string{"", "?quiet=1", "?quiet=0"} {
			code, ctype, msgs := loadStream(t, d, query, bad.data)
			if code != http.StatusOK || ctype != "application/json" {
				t.Errorf("%s load%s = %d %s, want 200 application/json", bad.name, query, code, ctype)
			}
			if len(msgs) == 0 || msgs[len(msgs)-1].Error == nil || msgs[len(msgs)-1].Error.Message == "" {
				t.Errorf("%s load%s: no error in the stream: %+v", bad.name, query, msgs)
			}
			if got := ids(); !slices.Equal(got, []string{id}) {
				t.Fatalf("%s load%s stored images: %q", bad.name, query, got)
			}
		}
	}
	garbage := filepath.Join(t.TempDir(), "garbage.tar")
	if err := os.WriteFile(garbage, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := d.Docker(t, "load", "-i", garbage); err == nil || !strings.Contains(out, "invalid image archive") {
		t.Errorf("docker load of garbage: %v %s", err, out)
	}

	// Not quiet: the layer's loading is reported under its short diff ID,
	// then the image; quiet: only the image.
	must(t, d, "rmi", ref)
	short := strings.TrimPrefix(layer, "sha256:")[:12]
	code, _, msgs := loadStream(t, d, "?quiet=0", archive)
	loading := 0
	for _, m := range msgs {
		if m.Status == "Loading layer" {
			loading++
			if m.ID != short || m.Progress == nil || m.Progress.Total <= 0 || m.Progress.Current > m.Progress.Total {
				t.Errorf("progress %+v, want id %s", m, short)
			}
		}
	}
	if code != http.StatusOK || loading == 0 || len(msgs) < 2 || msgs[len(msgs)-1].Stream != "Loaded image: "+ref+"\n" {
		t.Fatalf("load = %d %+v", code, msgs)
	}
	if done := msgs[len(msgs)-2]; done.Progress == nil || done.Progress.Current != done.Progress.Total {
		t.Errorf("last progress %+v, want the whole layer", done)
	}
	must(t, d, "rmi", ref)
	lr, err := d.Client(t).ImageLoad(context.Background(), bytes.NewReader(archive), client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(lr)
	lr.Close()
	if string(body) != `{"stream":"Loaded image: `+ref+`\n"}`+"\n" {
		t.Errorf("quiet load = %s", body)
	}
}

// saveFiles saves names through the SDK and returns the archive's files
// in order, with their dates.
func saveFiles(t *testing.T, c *client.Client, names ...string) ([]string, map[string][]byte, map[string]time.Time) {
	t.Helper()
	rc, err := c.ImageSave(context.Background(), names)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var order []string
	files, dates := map[string][]byte{}, map[string]time.Time{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return order, files, dates
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, h.Name)
		files[h.Name], dates[h.Name] = b, h.ModTime
	}
}

// tarDigest is the digest of a layer's uncompressed tar, and its entries.
func tarDigest(t *testing.T, b []byte) (digest.Digest, []string) {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return digest.FromBytes(b), names
		}
		if err != nil {
			t.Fatalf("a layer is not a tar: %v", err)
		}
		names = append(names, h.Name)
	}
}

// TestCompatImageSave: docker save writes Docker's OCI layout beside its
// manifest.json (moby's TestSaveOCI, TestSaveCheckTimes,
// TestSaveRepoWithMultipleImages, TestSaveDirectoryPermissions), and
// docker load takes it back.
func TestCompatImageSave(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	busy, err := c.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	created, err := time.Parse(time.RFC3339Nano, busy.Created)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, containerdRef, ociRef string }{
		{ref, ref, "latest"},
		{busy.ID, "", ""},
		{busy.RepoDigests[0], "", ""},
	} {
		order, files, dates := saveFiles(t, c, tc.name)
		for _, n := range order {
			if dates[n].After(created) {
				t.Errorf("%s: %s dated %s, after the image's %s", tc.name, n, dates[n], created)
			}
		}
		if !slices.Contains(order, "oci-layout") || !slices.Contains(order, "manifest.json") {
			t.Errorf("%s: entries %q", tc.name, order)
		}
		var index ocispec.Index
		if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
			t.Fatalf("%s: index.json %s: %v", tc.name, files["index.json"], err)
		}
		desc := index.Manifests[0]
		if desc.Annotations["io.containerd.image.name"] != tc.containerdRef || desc.Annotations[ocispec.AnnotationRefName] != tc.ociRef {
			t.Errorf("%s: annotations %v", tc.name, desc.Annotations)
		}
		var m ocispec.Manifest
		if err := json.Unmarshal(files["blobs/sha256/"+desc.Digest.Encoded()], &m); err != nil {
			t.Fatalf("%s: manifest: %v", tc.name, err)
		}
		var layers []string
		for _, l := range m.Layers {
			b, ok := files["blobs/sha256/"+l.Digest.Encoded()]
			if !ok || int64(len(b)) != l.Size {
				t.Errorf("%s: layer %s: %d bytes in the archive, descriptor says %d", tc.name, l.Digest, len(b), l.Size)
			}
			dg, _ := tarDigest(t, b)
			layers = append(layers, dg.String())
		}
		var cfg ocispec.Image
		if err := json.Unmarshal(files["blobs/sha256/"+m.Config.Digest.Encoded()], &cfg); err != nil {
			t.Fatalf("%s: config: %v", tc.name, err)
		}
		var diffIDs []string
		for _, d := range cfg.RootFS.DiffIDs {
			diffIDs = append(diffIDs, d.String())
		}
		if !slices.Equal(layers, busy.RootFS.Layers) || !slices.Equal(diffIDs, busy.RootFS.Layers) {
			t.Errorf("%s: layers %q, config diff IDs %q, image %q", tc.name, layers, diffIDs, busy.RootFS.Layers)
		}
	}

	// A repository saves every tag; manifest.json names each image's
	// config, which is in the archive.
	commit := func(tag string) string {
		res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: ref, Cmd: []string{"true"}}})
		if err != nil {
			t.Fatal(err)
		}
		cr, err := c.ContainerCommit(ctx, res.ID, client.ContainerCommitOptions{Reference: tag})
		if err != nil {
			t.Fatal(err)
		}
		return cr.ID
	}
	const repo = "foobar-save-multi-images-test"
	want := []string{strings.TrimPrefix(busy.ID, "sha256:"), strings.TrimPrefix(commit(repo+":foo"), "sha256:"), strings.TrimPrefix(commit(repo+":bar"), "sha256:")}
	_, files, _ := saveFiles(t, c, repo, ref)
	var items []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, ok := files[it.Config]; !ok {
			t.Errorf("no config %s in the archive", it.Config)
		}
	}
	// An image's ID is its manifest's digest (Docker's containerd image
	// store): index.json lists the manifests of the three images.
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range index.Manifests {
		if !slices.Contains(got, m.Digest.Encoded()) {
			got = append(got, m.Digest.Encoded())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(items) != 3 || !slices.Equal(got, want) {
		t.Errorf("index.json manifests %q, want %q (%d manifest.json items)", got, want, len(items))
	}

	// A built layer is in the archive as the directories and files it
	// holds.
	_, _, _ = classicBuild(t, c, "FROM "+ref+"\nRUN mkdir -p /opt/a/b && chown -R 1000:1000 /opt/a\nRUN touch /opt/a/b/c && chown 1000:1000 /opt/a/b/c\n",
		client.ImageBuildOptions{Tags: []string{"perms:1"}, Remove: true})
	_, files, _ = saveFiles(t, c, "perms:1")
	items = nil
	if err := json.Unmarshal(files["manifest.json"], &items); err != nil || len(items) != 1 {
		t.Fatalf("manifest.json %s: %v", files["manifest.json"], err)
	}
	found := false
	for _, p := range items[0].Layers {
		_, entries := tarDigest(t, files[p])
		entries = slices.DeleteFunc(entries, func(e string) bool { return strings.Contains(e, "dev/") })
		found = found || slices.Equal(entries, []string{"opt/", "opt/a/", "opt/a/b/", "opt/a/b/c"})
	}
	if !found {
		t.Errorf("no layer of perms:1 lists opt/a/b/c: %q", items[0].Layers)
	}

	// docker load takes the archive back.
	path := filepath.Join(t.TempDir(), "saved.tar")
	must(t, d, "save", "-o", path, ref, "perms:1")
	must(t, d, "rmi", "perms:1")
	out := lines(must(t, d, "load", "-i", path))
	slices.Sort(out)
	if !slices.Equal(out, []string{"Loaded image: " + ref, "Loaded image: perms:1"}) {
		t.Errorf("docker load = %q", out)
	}
	if got := must(t, d, "run", "--rm", "perms:1", "stat", "-c", "%u", "/opt/a/b/c"); got != "1000" {
		t.Errorf("owner of the loaded image's file = %q", got)
	}
}

// A client may remove an image between asking for its archive and reading
// it, as Docker's suite does (save, rmi, then load what was saved): the
// removal neither waits for the reader nor spoils the archive.
func TestImageSaveThenRemove(t *testing.T) {
	// Bigger than the socket's buffers: an archive streamed from the
	// store would still be unsent.
	reg := startRegistry(t, "", "")
	ref := reg.Addr + "/library/saverm:1"
	if err := testimage.Push(context.Background(), ref, bigImage(t, 16<<20, true)); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	must(t, d, "pull", "-q", ref)
	c := d.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := must(t, d, "image", "inspect", "-f", "{{.Id}}", ref)
	rdr, err := c.ImageSave(ctx, []string{ref})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if _, err := c.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil {
		t.Fatalf("rmi while the archive is unread: %v", err)
	}
	if out, _ := d.Docker(t, "image", "inspect", ref); !strings.Contains(out, "No such image") {
		t.Fatalf("the image is still there: %s", out)
	}
	resp, err := c.ImageLoad(ctx, rdr)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp)
	resp.Close()
	if got := must(t, d, "image", "inspect", "-f", "{{.Id}}", ref); got != id {
		t.Fatalf("loaded %s, saved %s", got, id)
	}
	if out := must(t, d, "run", "--rm", ref, "sh", "-c", "ls /data/big | wc -l"); out == "0" {
		t.Fatalf("the loaded image lacks its data")
	}
}

// docker import as Docker does it: a source URL the server answers with
// 404 is not found, a status Docker names in its message; an empty
// archive is an image with an empty rootfs.
func TestImportSourcesAsDocker(t *testing.T) {
	d, _ := pulled(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	for _, src := range []string{srv.URL + "/nofile.tar", strings.TrimPrefix(srv.URL, "http://") + "/nofile.tar"} {
		code, body := rawDo(t, d, "POST", "/images/create?fromSrc="+url.QueryEscape(src)+"&repo=badsrc&tag=1", nil, nil)
		if code != http.StatusNotFound || !strings.Contains(body, "with status 404 Not Found") {
			t.Errorf("import from %s: %d %s", src, code, body)
		}
	}
	if out, _ := d.Docker(t, "image", "inspect", "badsrc:1"); !strings.Contains(out, "No such image") {
		t.Errorf("a failed import left an image: %s", out)
	}
	code, body := rawDo(t, d, "POST", "/images/create?fromSrc=-&repo=empty&tag=1", nil, strings.NewReader(""))
	if code != http.StatusOK || strings.Contains(body, "error") {
		t.Fatalf("import of nothing: %d %s", code, body)
	}
	if layers := must(t, d, "image", "inspect", "-f", "{{len .RootFS.Layers}}", "empty:1"); layers != "1" {
		t.Errorf("the empty import has %s layers", layers)
	}
}

// GET /images/{name}/attestations (API 1.55): a pulled image of one
// manifest has no attestations, an empty list as Docker's containerd
// store answers; an unknown image is not found, and older API versions
// do not have the route. attestations_test.go tests an image that has
// some.
func TestImageAttestationsRoute(t *testing.T) {
	d, ref := pulled(t)
	if code, body := rawDo(t, d, "GET", "/v1.55/images/"+ref+"/attestations", nil, nil); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("attestations of %s: %d %s", ref, code, body)
	}
	if code, body := rawDo(t, d, "GET", "/v1.55/images/nosuch/attestations", nil, nil); code != http.StatusNotFound {
		t.Errorf("attestations of a missing image: %d %s", code, body)
	}
	if code, body := rawDo(t, d, "GET", "/v1.54/images/"+ref+"/attestations", nil, nil); code != http.StatusBadRequest || !strings.Contains(body, "requires minimum API version 1.55") {
		t.Errorf("attestations at API 1.54: %d %s", code, body)
	}
}
