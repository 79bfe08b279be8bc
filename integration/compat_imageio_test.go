//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
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
