//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/moby/api/types/common"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/storage/testimage"
)

const (
	provenanceType = "https://slsa.dev/provenance/v0.2"
	sbomType       = "https://spdx.dev/Document"
)

// loadAttested loads, through the SDK, the OCI layout BuildKit exports
// for img with a provenance and an SBOM statement, named name, and
// returns the layout's digests, the statements, and the load's output.
func loadAttested(t *testing.T, c *client.Client, name string, img v1.Image) (testimage.Attested, []testimage.Statement, string) {
	t.Helper()
	stmts := []testimage.Statement{
		{PredicateType: provenanceType, Body: []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"` + provenanceType + `","predicate":{"builder":{"id":"hutch"}}}`)},
		{PredicateType: sbomType, Body: []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"` + sbomType + `","predicate":{"spdxVersion":"SPDX-2.3"}}`)},
	}
	var archive bytes.Buffer
	att, err := testimage.AttestedLayout(&archive, "docker.io/library/"+name, img, stmts...)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := c.ImageLoad(context.Background(), &archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(lr)
	lr.Close()
	if err != nil {
		t.Fatal(err)
	}
	return att, stmts, string(out)
}

// TestImageAttestations: GET /images/{name}/attestations of a loaded
// image with attestations, every way Docker answers it.
func TestImageAttestations(t *testing.T) {
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()
	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	att, stmts, out := loadAttested(t, c, "attested:latest", img)
	if !strings.Contains(out, "Loaded image: attested:latest") || strings.Contains(out, "Error") {
		t.Fatalf("load: %s", out)
	}
	host := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	want := map[string]int{provenanceType: 0, sbomType: 1}

	check := func(t *testing.T, items []image.AttestationStatement, types []string, bodies bool) {
		t.Helper()
		var got []string
		for _, it := range items {
			got = append(got, it.PredicateType)
			i, ok := want[it.PredicateType]
			if !ok || it.Descriptor.Digest != att.Statements[i] || it.Descriptor.MediaType != "application/vnd.in-toto+json" ||
				it.Descriptor.Size != int64(len(stmts[i].Body)) || it.Descriptor.Annotations["in-toto.io/predicate-type"] != it.PredicateType {
				t.Errorf("statement %+v", it)
				continue
			}
			if bodies != (it.Statement != nil) {
				t.Fatalf("statement body %v, want one: %v", it.Statement, bodies)
			}
			if bodies && !bytes.Equal(*it.Statement, stmts[i].Body) {
				t.Errorf("statement %s, want %s", *it.Statement, stmts[i].Body)
			}
		}
		if !slices.Equal(got, types) {
			t.Errorf("predicate types %v, want %v", got, types)
		}
	}
	both := []string{provenanceType, sbomType}
	for _, tc := range []struct {
		name   string
		ref    string
		opts   []client.ImageAttestationsOption
		types  []string
		bodies bool
	}{
		{name: "default", ref: "attested", types: both},
		{name: "by ID", ref: att.Index.String(), types: both},
		{name: "with statements", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithStatement()}, types: both, bodies: true},
		{name: "one predicate type", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithPredicateTypes(sbomType)}, types: []string{sbomType}},
		{name: "two predicate types", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithPredicateTypes(sbomType, provenanceType)}, types: both},
		{name: "no predicate type", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithPredicateTypes()}, types: both},
		{name: "a predicate type it lacks", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithPredicateTypes("https://example.com/none")}},
		{name: "the host's platform", ref: "attested", opts: []client.ImageAttestationsOption{client.ImageAttestationsWithPlatform(host), client.ImageAttestationsWithStatement()},
			types: both, bodies: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.ImageAttestations(ctx, tc.ref, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			check(t, res.Items, tc.types, tc.bodies)
		})
	}

	t.Run("an image of one manifest", func(t *testing.T) {
		if _, err := c.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfsTar(t, false)), SourceName: "-"}, "single:1", client.ImageImportOptions{}); err != nil {
			t.Fatal(err)
		}
		res, err := c.ImageAttestations(ctx, "single:1")
		if err != nil || res.Items == nil || len(res.Items) != 0 {
			t.Errorf("attestations %+v, %v; want an empty list", res.Items, err)
		}
		if code, _, body := d.rawRequest(t, "GET", "/v1.55/images/single:1/attestations", ""); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
			t.Errorf("answer %d %s, want 200 []", code, body)
		}
	})

	t.Run("a platform it lacks", func(t *testing.T) {
		_, err := c.ImageAttestations(ctx, "attested", client.ImageAttestationsWithPlatform(ocispec.Platform{OS: "linux", Architecture: "riscv64"}))
		if !cerrdefs.IsNotFound(err) || !strings.Contains(err.Error(),
			"resolving image manifest for platform &{Architecture:riscv64 OS:linux OSVersion: OSFeatures:[] Variant:}: no manifest for platform linux/riscv64: not found") {
			t.Errorf("error %v, want Docker's not found", err)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		before := imageState(t, c)
		several := url.Values{"platform": {`{"os":"linux","architecture":"amd64"}`, `{"os":"linux","architecture":"arm64"}`}}
		for _, tc := range []struct {
			path    string
			status  int
			message string
		}{
			{"/v1.55/images/attested/attestations?" + several.Encode(), 400, "only one platform value is currently supported"},
			{"/v1.55/images/attested/attestations?platform=" + url.QueryEscape("{"), 400, "failed to parse platform: unexpected end of JSON input"},
			{"/v1.55/images/attested/attestations?platform=" + url.QueryEscape(`{"architecture":"arm64"}`), 400, "both OS and Architecture must be provided"},
			{"/v1.55/images/no-such-image:latest/attestations", 404, "No such image: no-such-image:latest"},
			{"/v1.54/images/attested/attestations", 400, "/images/{name:.*}/attestations requires minimum API version 1.55"},
		} {
			code, _, body := d.rawRequest(t, "GET", tc.path, "")
			var e common.ErrorResponse
			if code != tc.status || json.Unmarshal([]byte(body), &e) != nil || e.Message != tc.message {
				t.Errorf("GET %s = %d %s, want %d %q", tc.path, code, body, tc.status, tc.message)
			}
		}
		_, err := c.ImageAttestations(ctx, "no-such-image:latest")
		if !cerrdefs.IsNotFound(err) {
			t.Errorf("SDK: attestations of no image = %v", err)
		}
		if after := imageState(t, c); !slices.Equal(before, after) {
			t.Errorf("images changed: %v, then %v", before, after)
		}
	})

	// A platform whose layer does not unpack leaves the image loaded with
	// Docker's "Error unpacking image" line, its attestations readable.
	t.Run("a platform that does not unpack", func(t *testing.T) {
		bogus, err := mutate.AppendLayers(empty.Image, static.NewLayer([]byte("layer"), types.OCILayer))
		if err != nil {
			t.Fatal(err)
		}
		cf, err := bogus.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf.OS, cf.Architecture = host.OS, host.Architecture
		if bogus, err = mutate.ConfigFile(bogus, cf); err != nil {
			t.Fatal(err)
		}
		_, _, out := loadAttested(t, c, "bogus:latest", bogus)
		if !strings.Contains(out, "Loaded image: bogus:latest") || !strings.Contains(out, "Error unpacking image bogus:latest: ") {
			t.Fatalf("load: %s", out)
		}
		res, err := c.ImageAttestations(ctx, "bogus", client.ImageAttestationsWithStatement())
		if err != nil {
			t.Fatal(err)
		}
		check(t, res.Items, both, true)
		if _, err := c.ImageRemove(ctx, "bogus", client.ImageRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// imageState is every image's ID and tags, sorted.
func imageState(t *testing.T, c *client.Client) []string {
	t.Helper()
	list, err := c.ImageList(context.Background(), client.ImageListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, img := range list.Items {
		out = append(out, img.ID+" "+strings.Join(img.RepoTags, ","))
	}
	slices.Sort(out)
	return out
}
