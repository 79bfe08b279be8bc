//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
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

	"github.com/distribution/reference"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// The ways images come without a registry: docker import, save and load;
// and image prune.

// rootfsTar builds a rootfs with the static busybox, gzipped or not.
func rootfsTar(t *testing.T, gz bool) []byte {
	t.Helper()
	bin, err := os.ReadFile(testimage.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/hello", Typeflag: tar.TypeReg, Mode: 0o644, Size: 6},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "bin/busybox":
			tw.Write(bin)
		case "etc/hello":
			tw.Write([]byte("hello\n"))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func TestImageImport(t *testing.T) {
	d := startDaemon(t)
	dir := t.TempDir()
	tarPath := filepath.Join(dir, "rootfs.tar")
	if err := os.WriteFile(tarPath, rootfsTar(t, false), 0o644); err != nil {
		t.Fatal(err)
	}
	out := must(t, d, "import", "-m", "made by a test", "-c", "ENV GREETING=hi", "-c", `CMD ["/bin/busybox", "cat", "/etc/hello"]`, tarPath, "imported:1")
	if !strings.HasPrefix(out, "sha256:") || len(out) != 71 {
		t.Fatalf("docker import printed %q", out)
	}
	if got := must(t, d, "run", "--rm", "imported:1", "/bin/busybox", "echo", "ok"); got != "ok" {
		t.Errorf("run of the imported image = %q", got)
	}
	if got := must(t, d, "run", "--rm", "imported:1"); got != "hello" {
		t.Errorf("run with the imported CMD = %q", got)
	}
	if got := must(t, d, "run", "--rm", "imported:1", "sh", "-c", "echo $GREETING"); got != "hi" {
		t.Errorf("ENV change = %q", got)
	}
	if got := must(t, d, "image", "inspect", "--format", "{{.Id}} {{.Comment}} {{.Os}}", "imported:1"); got != out+" made by a test linux" {
		t.Errorf("inspect = %q", got)
	}
	if got := must(t, d, "history", "--format", "{{.Comment}}", "imported:1"); got != "made by a test" {
		t.Errorf("history comment = %q", got)
	}

	// From a URL, as Docker fetches it.
	gz := rootfsTar(t, true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(gz) }))
	defer srv.Close()
	must(t, d, "import", srv.URL+"/rootfs.tar.gz", "fromurl:1")
	if got := must(t, d, "run", "--rm", "fromurl:1", "/bin/busybox", "cat", "/etc/hello"); got != "hello" {
		t.Errorf("run of the image imported from a URL = %q", got)
	}
	if got := must(t, d, "history", "--no-trunc", "--format", "{{.Comment}}", "fromurl:1"); got != "Imported from "+srv.URL+"/rootfs.tar.gz" {
		t.Errorf("comment of the URL import = %q", got)
	}

	// Gzipped, from the SDK, without a name: a dangling image; the stream
	// ends with its ID.
	c := d.Client(t)
	rc, err := c.ImageImport(context.Background(), client.ImageImportSource{Source: bytes.NewReader(rootfsTar(t, true)), SourceName: "-"}, "", client.ImageImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	var m jsonstream.Message
	if err := json.Unmarshal(bytes.TrimSpace(body), &m); err != nil || !strings.HasPrefix(m.Status, "sha256:") {
		t.Fatalf("import stream %q: %v", body, err)
	}
	if got := must(t, d, "images", "-q", "--no-trunc", "--filter", "dangling=true"); got != m.Status {
		t.Errorf("dangling after an unnamed import = %q, want %s", got, m.Status)
	}
	if got := must(t, d, "history", "--format", "{{.Comment}}", m.Status); got != "Imported from -" {
		t.Errorf("default comment = %q", got)
	}

	// An empty stdin is an empty rootfs, as Docker imports it.
	if out, err := d.Docker(t, "import", "-", "empty:1"); err != nil {
		t.Errorf("import of an empty stdin: %v %s", err, out)
	}
	// Bad input: not a tar, a change that is not allowed. Nothing is left.
	before := must(t, d, "images", "-qa", "--no-trunc")
	layers := storeLayers(t, d)
	code, resp := rawDo(t, d, "POST", "/images/create?fromSrc=-&repo=bad&tag=1", nil, strings.NewReader(strings.Repeat("not a tar archive ", 100)))
	if code != http.StatusBadRequest || !strings.Contains(resp, "not a valid tar archive") {
		t.Errorf("import of garbage = %d %s", code, resp)
	}
	code, resp = rawDo(t, d, "POST", "/images/create?fromSrc=-&repo=bad&changes="+url.QueryEscape("RUN rm -rf /"), nil, bytes.NewReader(rootfsTar(t, false)))
	if code != http.StatusBadRequest || !strings.Contains(resp, "run is not a valid change command") {
		t.Errorf("import with RUN = %d %s", code, resp)
	}
	if after := must(t, d, "images", "-qa", "--no-trunc"); after != before {
		t.Errorf("failed imports left images: %q, before %q", after, before)
	}
	if after := sameStoreLayers(t, d, layers); !slices.Equal(after, layers) {
		t.Errorf("failed imports left layers: %q, before %q", after, layers)
	}
}

func TestImageSaveLoad(t *testing.T) {
	d, ref := pulled(t)
	id := must(t, d, "image", "inspect", "--format", "{{.Id}}", ref)
	must(t, d, "tag", ref, "saved:1")
	archive := filepath.Join(t.TempDir(), "images.tar")
	must(t, d, "save", "-o", archive, ref, "saved:1")
	var tags []string
	for _, tag := range archiveTags(t, archive) {
		// Docker writes familiar names, containers/image full ones: both
		// load the same.
		named, err := reference.ParseNormalizedNamed(tag)
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, reference.FamiliarString(named))
	}
	slices.Sort(tags)
	if !slices.Equal(tags, []string{ref, "saved:1"}) {
		t.Errorf("manifest.json RepoTags = %q", tags)
	}
	must(t, d, "rmi", ref, "saved:1")
	if out := must(t, d, "images", "-qa"); out != "" {
		t.Fatalf("images left after rmi: %q", out)
	}
	out := lines(must(t, d, "load", "-i", archive))
	slices.Sort(out)
	if want := []string{"Loaded image: " + ref, "Loaded image: saved:1"}; !slices.Equal(out, want) {
		t.Errorf("docker load = %q, want %q", out, want)
	}
	if got := must(t, d, "image", "inspect", "--format", "{{.Id}}", "saved:1"); got != id {
		t.Errorf("loaded ID %s, saved %s", got, id)
	}
	if got := must(t, d, "run", "--rm", "saved:1", "echo", "loaded"); got != "loaded" {
		t.Errorf("run of the loaded image = %q", got)
	}

	// Through the SDK: save by ID (untagged), load with quiet=false.
	c := d.Client(t)
	rc, err := c.ImageSave(context.Background(), []string{id[7:19]})
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(data) < 1024 {
		t.Fatalf("save by ID: %d bytes, %v", len(data), err)
	}
	lr, err := c.ImageLoad(context.Background(), bytes.NewReader(data), client.ImageLoadWithQuiet(false))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(lr)
	lr.Close()
	if !strings.Contains(string(body), `{"stream":"Loaded image ID: `+id+`\n"}`) {
		t.Errorf("load stream = %s", body)
	}

	// Unknown names fail before any byte; a broken archive loads nothing.
	if out, err := d.Docker(t, "save", "-o", filepath.Join(t.TempDir(), "x.tar"), "nosuch:1"); err == nil || !strings.Contains(out, "No such image: nosuch:1") {
		t.Errorf("save of a missing image: %v %s", err, out)
	}
	code, resp := rawDo(t, d, "POST", "/images/load", nil, bytes.NewReader(data[:len(data)/2]))
	if code == http.StatusOK && !strings.Contains(resp, "errorDetail") {
		t.Errorf("load of a truncated archive = %d %s", code, resp)
	}
	if got := slices.Compact(lines(must(t, d, "images", "-qa", "--no-trunc"))); !slices.Equal(got, []string{id}) {
		t.Errorf("images after a broken load = %q", got)
	}
}

// archiveTags reads the RepoTags of a docker-archive's manifest.json.
func archiveTags(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no manifest.json in %s: %v", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var items []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&items); err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, it := range items {
			tags = append(tags, it.RepoTags...)
		}
		return tags
	}
}

func TestImagePrune(t *testing.T) {
	d, ref := pulled(t)
	tarPath := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(tarPath, rootfsTar(t, false), 0o644); err != nil {
		t.Fatal(err)
	}
	first := must(t, d, "import", tarPath, "dang:1")
	second := must(t, d, "import", tarPath, "dang:1") // takes the tag: first is dangling
	if first == second {
		t.Fatal("two imports gave the same ID")
	}
	if got := must(t, d, "images", "-q", "--no-trunc", "--filter", "dangling=true"); got != first {
		t.Errorf("dangling = %q, want %s", got, first)
	}
	out := must(t, d, "image", "prune", "-f")
	if !strings.Contains(out, "deleted: "+first) || !strings.Contains(out, "Total reclaimed space") {
		t.Errorf("prune = %q", out)
	}
	// -a: every unused image; the one a container uses stays.
	cid := must(t, d, "create", ref, "true")
	out = must(t, d, "image", "prune", "-a", "-f")
	if !strings.Contains(out, "untagged: dang:1") || !strings.Contains(out, "deleted: "+second) {
		t.Errorf("prune -a = %q", out)
	}
	if got := must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}"); got != ref {
		t.Errorf("images after prune -a = %q, want only %s", got, ref)
	}
	must(t, d, "rm", cid)
	if code, body := rawDo(t, d, "POST", "/images/prune?filters="+url.QueryEscape(`{"nope":["x"]}`), nil, nil); code != 400 || !strings.Contains(body, "invalid filter 'nope'") {
		t.Errorf("prune with a bad filter = %d %s", code, body)
	}
}
