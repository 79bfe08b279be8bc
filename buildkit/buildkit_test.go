package buildkit

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

func TestBlobDigest(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		typ  byte
		ok   bool
	}{
		{"blobs/sha256/" + hex, tar.TypeReg, true},
		{"./blobs/sha256/" + hex, tar.TypeReg, true},
		{hex + ".tar", tar.TypeReg, true},
		{hex + ".json", tar.TypeReg, true},
		{hex + "/layer.tar", tar.TypeReg, false},
		{"blobs/sha256/" + hex, tar.TypeSymlink, false},
		{"manifest.json", tar.TypeReg, false},
		{"blobs/sha256/xyz", tar.TypeReg, false},
		{"other/" + hex + ".tar", tar.TypeReg, false},
	} {
		d, ok := blobDigest(&tar.Header{Name: tc.name, Typeflag: tc.typ})
		if ok != tc.ok || ok && d.Encoded() != hex {
			t.Errorf("blobDigest(%q) = %s %v, want ok %v", tc.name, d, ok, tc.ok)
		}
	}
}

func TestTagNames(t *testing.T) {
	got := tagNames("bk1, localhost:5000/x/y:2,,a@sha256:" + strings.Repeat("0", 64) + ",Bad::Ref")
	want := []string{"docker.io/library/bk1:latest", "localhost:5000/x/y:2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tagNames = %q, want %q", got, want)
	}
}

func TestPruneRequest(t *testing.T) {
	for _, tc := range []struct {
		query   string
		all     bool
		filter  string
		keep    time.Duration
		reserve int64
		err     string
	}{
		{query: ""},
		{query: "all=1&reserved-space=100", all: true, reserve: 100},
		{query: "keep-storage=7", reserve: 7},
		{query: "filters=" + url.QueryEscape(`{"until":{"24h":true},"type":{"regular":true}}`), filter: "type==regular", keep: 24 * time.Hour},
		{query: "filters=" + url.QueryEscape(`{"id":["abc"],"inuse":{}}`), filter: "id~=abc,inuse"},
		{query: "filters=" + url.QueryEscape(`{"nope":{"x":true}}`), err: `invalid filter "nope"`},
		{query: "filters=" + url.QueryEscape(`{"until":{"soon":true}}`), err: "expects a duration"},
		{query: "filters=" + url.QueryEscape(`{"type":{"a":true,"b":true}}`), err: "only one value"},
		{query: "filters=notjson", err: "invalid filters"},
		{query: "all=maybe", err: "invalid all"},
		{query: "max-used-space=lots", err: "not a number"},
	} {
		r, _ := http.NewRequest(http.MethodPost, "/build/prune?"+tc.query, nil)
		req, err := pruneRequest(r)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.query, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if req.All != tc.all || strings.Join(req.Filter, "|") != tc.filter || req.ReservedSpace != tc.reserve {
			t.Errorf("%s: %+v", tc.query, req)
		}
		if got := time.Duration(req.KeepDuration); got < tc.keep-time.Minute || got > tc.keep+time.Minute {
			t.Errorf("%s: keep %s, want %s", tc.query, got, tc.keep)
		}
	}
}

func TestSolveRequest(t *testing.T) {
	q := url.Values{
		"t":           {"a:1", "b"},
		"dockerfile":  {"sub/Dockerfile"},
		"target":      {"final"},
		"buildargs":   {`{"X":"1","Y":null}`},
		"labels":      {`{"l":"v"}`},
		"networkmode": {"host"},
		"extrahosts":  {"h:1.2.3.4"},
		"nocache":     {"1"},
		"session":     {"sess"},
	}
	r, _ := http.NewRequest(http.MethodPost, "/build?"+q.Encode(), nil)
	req, exp, err := solveRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	a := req.FrontendAttrs
	for k, want := range map[string]string{
		"filename": "sub/Dockerfile", "target": "final", "build-arg:X": "1", "label:l": "v",
		"force-network-mode": "host", "add-hosts": "h=1.2.3.4", "no-cache": "", "image-resolve-mode": "local",
	} {
		if got, ok := a[k]; !ok || got != want {
			t.Errorf("attr %s = %q (%v), want %q", k, got, ok, want)
		}
	}
	if _, ok := a["build-arg:Y"]; ok {
		t.Error("a null build arg became an attribute")
	}
	if exp != mobyExporter || len(req.Exporters) != 1 || req.Exporters[0].Attrs["name"] != "docker.io/library/a:1,docker.io/library/b:latest" {
		t.Errorf("exporter %s %+v", exp, req.Exporters)
	}
	if req.Session != "sess" || len(req.Entitlements) != 1 || req.Frontend != "dockerfile.v0" {
		t.Errorf("request %+v", req)
	}
	for _, bad := range []string{"buildargs=x", "labels=[1]", "networkmode=bridge", "extrahosts=nocolon", "platform=a%2F%2Fb%2Fc%2Fd", "outputs=" + url.QueryEscape(`[{"Type":"a"},{"Type":"b"}]`)} {
		r, _ := http.NewRequest(http.MethodPost, "/build?"+bad, nil)
		if _, _, err := solveRequest(r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// FuzzSolveRequest: any query of POST /build?version=2 is a solve or an
// error, never a panic; a solve is always the Dockerfile frontend's.
func FuzzSolveRequest(f *testing.F) {
	f.Add("t=a&buildargs=%7B%22X%22%3A%221%22%7D&outputs=%5B%7B%22Type%22%3A%22local%22%7D%5D")
	f.Add("networkmode=host&extrahosts=a:b&platform=linux/arm64&cachefrom=%5B%22x%22%5D")
	f.Fuzz(func(t *testing.T, query string) {
		r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/build", RawQuery: query}}
		req, _, err := solveRequest(r)
		if err == nil && (req.Frontend != "dockerfile.v0" || req.FrontendAttrs == nil) {
			t.Fatalf("solve %+v", req)
		}
	})
}

// FuzzPruneRequest: any query of POST /build/prune is a prune or an error.
func FuzzPruneRequest(f *testing.F) {
	f.Add("all=1&filters=%7B%22until%22%3A%7B%2224h%22%3Atrue%7D%7D")
	f.Add("filters=%7B%22id%22%3A%5B%22a%22%5D%7D&keep-storage=5")
	f.Fuzz(func(t *testing.T, query string) {
		r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/build/prune", RawQuery: query}}
		if req, err := pruneRequest(r); err == nil && req == nil {
			t.Fatal("no request and no error")
		}
	})
}

func TestExitCode(t *testing.T) {
	for line, want := range map[string]int{"status 0\n": 0, "status 768\n": 3, "status 9\n": 137, "status 15": 143} {
		ws, ok := wire.ParseRuntimeStatus(line)
		if !ok || exitCode(ws) != want {
			t.Errorf("%q: %d %v, want %d", line, exitCode(ws), ok, want)
		}
	}
	if _, ok := wire.ParseRuntimeStatus("nonsense"); ok {
		t.Error("parsed nonsense")
	}

}

// Registries are HTTPS, daemon.json's insecure ones included (BuildKit's
// transport for those falls back to plain HTTP); CIDRs name no host.
func TestRegistryHosts(t *testing.T) {
	hosts := registryHosts([]string{"reg.example:5000", "http://other.example/", "10.0.0.0/8"})
	for _, host := range []string{"reg.example:5000", "other.example", "secure.example"} {
		hs, err := hosts(host)
		if err != nil || len(hs) != 1 || hs[0].Scheme != "https" || hs[0].Client == nil {
			t.Fatalf("%s: %+v %v", host, hs, err)
		}
	}
}

// The docker-archive the moby exporter loads: manifest.json first, the
// config, and every layer uncompressed under its diff ID, whether the
// content store holds it compressed or not.
func TestWriteArchive(t *testing.T) {
	ctx := context.Background()
	cs, err := local.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(mt string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(ctx, cs, d.Digest.String(), bytes.NewReader(b), d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	plain := tarOf(t, "a", "first layer")
	second := tarOf(t, "b", "second layer")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(second)
	zw.Close()
	layers := []ocispec.Descriptor{put(ocispec.MediaTypeImageLayer, plain), put(ocispec.MediaTypeImageLayerGzip, gz.Bytes())}
	names := []string{digest.FromBytes(plain).Encoded() + ".tar", digest.FromBytes(second).Encoded() + ".tar"}
	e := &exporter{cs: cs}
	var out bytes.Buffer
	if err := e.writeArchive(ctx, &out, []byte(`[{}]`), "c.json", []byte(`{"config":1}`), layers, names); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&out)
	var got []string
	bodies := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
		bodies[h.Name], _ = io.ReadAll(tr)
	}
	if want := append([]string{"manifest.json", "c.json"}, names...); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("entries %q, want %q", got, want)
	}
	if !bytes.Equal(bodies[names[0]], plain) || !bytes.Equal(bodies[names[1]], second) {
		t.Error("a layer was not written uncompressed as it was")
	}
}

func tarOf(t *testing.T, name, body string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	return b.Bytes()
}
