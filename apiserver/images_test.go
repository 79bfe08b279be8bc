package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/moby/moby/api/types/common"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/images"
)

// imageFake records the image call a request made, as "Method(args)",
// and answers with fixed data or err.
type imageFake struct {
	fakeBackend
	call string
	err  error
}

func (f *imageFake) record(format string, args ...any) error {
	f.call = fmt.Sprintf(format, args...)
	return f.err
}

func (f *imageFake) ImagePull(_ context.Context, req images.PullRequest, progress func(jsonstream.Message)) error {
	p := ""
	if req.Platform != "" {
		p = "," + req.Platform
	}
	if err := f.record("ImagePull(%s,%s,%s,%s%s)", req.FromImage, req.Tag, req.Auth.Username, req.Auth.Password, p); err != nil {
		return err
	}
	progress(jsonstream.Message{Status: "Pulling from library/x", ID: "latest"})
	return nil
}

func (f *imageFake) ImageList(_ context.Context, req images.ListRequest) ([]image.Summary, error) {
	return []image.Summary{{ID: "sha256:aa", Size: 7, Containers: 2, SharedSize: -1}}, f.record("ImageList(%v,%s,%v)", req.All, req.Filters, req.SharedSize)
}

// plat shows a platform in a recorded call: ",os/arch" or nothing.
func plat(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	return "," + platforms.FormatAll(*p)
}

func plats(ps []ocispec.Platform) string {
	out := ""
	for _, p := range ps {
		out += plat(&p)
	}
	return out
}

func (f *imageFake) ImageInspect(_ context.Context, ref string, p *ocispec.Platform) (images.Detail, error) {
	resp := images.Detail{InspectResponse: image.InspectResponse{ID: "sha256:aa", Size: 7, RepoTags: []string{}, RepoDigests: []string{}}}
	if ref == "committed" {
		resp.Parent = "sha256:bb"
		resp.Container = "c1"
		resp.ContainerConfig = &container.Config{Volumes: map[string]struct{}{"/v": {}}}
	}
	return resp, f.record("ImageInspect(%s%s)", ref, plat(p))
}

func (f *imageFake) ImageHistory(_ context.Context, ref string, p *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	return nil, f.record("ImageHistory(%s%s)", ref, plat(p))
}

// notFoundClass is classed by its NotFound method, as engine/images
// classes an error whose message ends with "not found".
type notFoundClass struct{ error }

func (notFoundClass) NotFound() {}

// ImageAttestations answers image "multi" with one statement (its body
// when asked), any other with none.
func (f *imageFake) ImageAttestations(_ context.Context, ref string, req images.AttestationRequest) ([]image.AttestationStatement, error) {
	err := f.record("ImageAttestations(%s%s,%s,%v)", ref, plat(req.Platform), strings.Join(req.PredicateTypes, "+"), req.Statement)
	if ref != "multi" || err != nil {
		return nil, err
	}
	st := image.AttestationStatement{PredicateType: "https://slsa.dev/provenance/v0.2",
		Descriptor: ocispec.Descriptor{MediaType: "application/vnd.in-toto+json", Digest: "sha256:cc", Size: 2}}
	if req.Statement {
		raw := json.RawMessage(`{}`)
		st.Statement = &raw
	}
	return []image.AttestationStatement{st}, nil
}

func (f *imageFake) ImageTag(_ context.Context, ref, repo, tag string) error {
	return f.record("ImageTag(%s,%s,%s)", ref, repo, tag)
}

func (f *imageFake) ImageRemove(_ context.Context, ref string, req images.RemoveRequest) ([]image.DeleteResponse, error) {
	return []image.DeleteResponse{{Untagged: "x:1"}, {Deleted: "sha256:aa"}}, f.record("ImageRemove(%s,%v,%v%s)", ref, req.Force, req.NoPrune, plats(req.Platforms))
}

func (f *imageFake) ImagePrune(_ context.Context, filters string) (image.PruneReport, error) {
	return image.PruneReport{SpaceReclaimed: 5}, f.record("ImagePrune(%s)", filters)
}

func (f *imageFake) ImageImport(_ context.Context, req images.ImportRequest, rootfs io.Reader, progress func(jsonstream.Message)) error {
	body, _ := io.ReadAll(rootfs)
	if err := f.record("ImageImport(%s,%s,%s,%s,%q,%s)", req.Source, req.Repo, req.Tag, req.Message, req.Changes, body); err != nil {
		return err
	}
	progress(jsonstream.Message{Status: "sha256:aa"})
	return nil
}

func (f *imageFake) ImageLoad(_ context.Context, archive io.Reader, req images.LoadRequest, progress func(jsonstream.Message)) error {
	body, _ := io.ReadAll(archive)
	if err := f.record("ImageLoad(%v,%s%s)", req.Quiet, body, plats(req.Platforms)); err != nil {
		return err
	}
	progress(jsonstream.Message{Stream: "Loaded image: x:1\n"})
	return nil
}

func (f *imageFake) ImageSave(_ context.Context, names []string, p []ocispec.Platform, w io.Writer) error {
	if err := f.record("ImageSave(%q%s)", names, plats(p)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "TAR")
	return err
}

func (f *imageFake) RegistryLogin(_ context.Context, auth registry.AuthConfig) (registry.AuthResponse, error) {
	return registry.AuthResponse{Status: "Login Succeeded"}, f.record("RegistryLogin(%s,%s,%s)", auth.Username, auth.Password, auth.ServerAddress)
}

func (f *imageFake) DistributionInspect(_ context.Context, name string, auth registry.AuthConfig) (registry.DistributionInspect, error) {
	res := registry.DistributionInspect{Descriptor: ocispec.Descriptor{MediaType: "application/vnd.oci.image.index.v1+json", Digest: "sha256:aa", Size: 9},
		Platforms: []ocispec.Platform{{OS: "linux", Architecture: "amd64"}}}
	return res, f.record("DistributionInspect(%s,%s,%s)", name, auth.Username, auth.Password)
}

func (f *imageFake) SearchImages(_ context.Context, term string, limit int, filters string, auth registry.AuthConfig) ([]registry.SearchResult, error) {
	res := []registry.SearchResult{{Name: "127.0.0.1:5000/library/busybox", StarCount: 3}}
	return res, f.record("SearchImages(%s,%d,%s,%s,%s)", term, limit, filters, auth.Username, auth.Password)
}

func TestImageRoutes(t *testing.T) {
	goodAuth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"p"}`))
	tests := []struct {
		name, method, target string
		header               map[string]string
		body                 string
		err                  error
		call                 string // the backend call made, "" for none
		status               int
		contains             string // body substring
		message              string // error message
		ctype                string
	}{
		{name: "list", method: "GET", target: "/images/json?all=1&filters=%7B%7D&shared-size=1", call: "ImageList(true,{},true)", status: 200,
			contains: `"Containers":2`, ctype: "application/json"},
		{name: "list before 1.42 ignores shared-size", method: "GET", target: "/v1.41/images/json?shared-size=1", call: "ImageList(false,,false)", status: 200,
			contains: `"RepoTags":["<none>:<none>"],"SharedSize":-1,"Size":7,"VirtualSize":7`},
		{name: "list before 1.51 hides Containers", method: "GET", target: "/v1.50/images/json", call: "ImageList(false,,false)", status: 200,
			contains: `"Containers":-1,`},
		{name: "list empty arrays", method: "GET", target: "/images/json", call: "ImageList(false,,false)", status: 200,
			contains: `"RepoDigests":[],"RepoTags":[]`},
		{name: "inspect name with slashes", method: "GET", target: "/v1.41/images/127.0.0.1:5000/library/busybox:latest/json",
			call: "ImageInspect(127.0.0.1:5000/library/busybox:latest)", status: 200, contains: `"VirtualSize":7`},
		{name: "inspect ID", method: "GET", target: "/images/sha256:abc/json", call: "ImageInspect(sha256:abc)", status: 200, contains: `"Id":"sha256:aa"`},
		{name: "inspect a committed image", method: "GET", target: "/images/committed/json", call: "ImageInspect(committed)", status: 200, contains: `"Parent":"sha256:bb"`},
		{name: "inspect a committed image before 1.44", method: "GET", target: "/v1.43/images/committed/json", call: "ImageInspect(committed)", status: 200,
			contains: `"Parent":"sha256:bb","VirtualSize":7`},
		{name: "inspect missing", method: "GET", target: "/images/x/json", err: errdefs.ErrNotFound.WithMessage("No such image: x"),
			call: "ImageInspect(x)", status: 404, message: "No such image: x"},
		{name: "history", method: "GET", target: "/images/a/b:c/history", call: "ImageHistory(a/b:c)", status: 200, contains: "[]"},
		{name: "image named json", method: "GET", target: "/images/json/json", call: "ImageInspect(json)", status: 200},
		{name: "attestations none", method: "GET", target: "/images/a/b:c/attestations", call: "ImageAttestations(a/b:c,,false)", status: 200,
			contains: "[]", ctype: "application/json"},
		{name: "attestations", method: "GET", target: "/images/multi/attestations", call: "ImageAttestations(multi,,false)", status: 200,
			contains: `[{"Descriptor":{"mediaType":"application/vnd.in-toto+json","digest":"sha256:cc","size":2},"PredicateType":"https://slsa.dev/provenance/v0.2"}]`},
		{name: "attestations with statements", method: "GET", target: "/images/multi/attestations?statement=1", call: "ImageAttestations(multi,,true)", status: 200,
			contains: `"PredicateType":"https://slsa.dev/provenance/v0.2","Statement":{}}]`},
		{name: "attestations of types and a platform", method: "GET",
			target: `/images/multi/attestations?type=t1&type=+t2+&type=&platform={"os":"linux","architecture":"arm64","variant":"v8"}`,
			call:   "ImageAttestations(multi,linux/arm64/v8,t1+t2,false)", status: 200},
		{name: "attestations empty platform", method: "GET", target: "/images/multi/attestations?platform=", call: "ImageAttestations(multi,,false)", status: 200},
		{name: "attestations of several platforms", method: "GET",
			target: `/images/multi/attestations?platform={"os":"linux","architecture":"amd64"}&platform={"os":"linux","architecture":"arm64"}`,
			status: 400, message: "only one platform value is currently supported"},
		{name: "attestations bad platform", method: "GET", target: `/images/multi/attestations?platform={`, status: 400,
			message: "failed to parse platform: unexpected end of JSON input"},
		{name: "attestations platform without OS", method: "GET", target: `/images/multi/attestations?platform={"architecture":"arm64"}`, status: 400,
			message: "both OS and Architecture must be provided"},
		{name: "attestations of a missing image", method: "GET", target: "/images/x/attestations", err: errdefs.ErrNotFound.WithMessage("No such image: x"),
			call: "ImageAttestations(x,,false)", status: 404, message: "No such image: x"},
		{name: "attestations of a missing platform", method: "GET", target: `/images/x/attestations?platform={"os":"linux","architecture":"riscv64"}`,
			err:  fmt.Errorf("resolving image manifest for platform &{}: %w", notFoundClass{errors.New("no manifest for platform linux/riscv64: not found")}),
			call: "ImageAttestations(x,linux/riscv64,,false)", status: 404, message: "resolving image manifest for platform &{}: no manifest for platform linux/riscv64: not found"},
		{name: "attestations before 1.55", method: "GET", target: "/v1.54/images/a/attestations", status: 400,
			message: "/images/{name:.*}/attestations requires minimum API version 1.55"},
		{name: "no operation", method: "GET", target: "/images/busybox", status: 404, message: "page not found"},
		{name: "unknown operation", method: "GET", target: "/images/busybox/nope", status: 404, message: "page not found"},
		{name: "operation of another method", method: "POST", target: "/images/busybox/json", status: 404, message: "page not found"},
		{name: "tag", method: "POST", target: "/images/reg:5000/a/b/tag?repo=x/y&tag=2", call: "ImageTag(reg:5000/a/b,x/y,2)", status: 201},
		{name: "tag invalid", method: "POST", target: "/images/a/tag?repo=UPPER", err: errdefs.ErrInvalidArgument.WithMessage("invalid reference format"),
			call: "ImageTag(a,UPPER,)", status: 400, message: "invalid reference format"},
		{name: "remove", method: "DELETE", target: "/images/reg:5000/a/b:1?force=1&noprune=true", call: "ImageRemove(reg:5000/a/b:1,true,true)", status: 200,
			contains: `[{"Untagged":"x:1"},{"Deleted":"sha256:aa"}]`},
		{name: "remove conflict", method: "DELETE", target: "/images/a", err: errdefs.ErrConflict.WithMessage("conflict: x"),
			call: "ImageRemove(a,false,false)", status: 409, message: "conflict: x"},
		{name: "prune", method: "POST", target: "/images/prune?filters=%7B%22dangling%22%3A%5B%22false%22%5D%7D", call: `ImagePrune({"dangling":["false"]})`,
			status: 200, contains: `"SpaceReclaimed":5`},
		{name: "pull", method: "POST", target: "/images/create?fromImage=busybox&tag=1", header: map[string]string{"X-Registry-Auth": goodAuth},
			call: "ImagePull(busybox,1,u,p)", status: 200, contains: `{"status":"Pulling from library/x","id":"latest"}`},
		{name: "pull bad auth", method: "POST", target: "/images/create?fromImage=busybox", header: map[string]string{"X-Registry-Auth": "%%%"},
			status: 400, message: "invalid X-Registry-Auth header: it must be base64url-encoded JSON with username, password and serveraddress"},
		{name: "pull error before the stream", method: "POST", target: "/images/create?fromImage=UPPER", err: errdefs.ErrInvalidArgument.WithMessage("invalid reference format"),
			call: "ImagePull(UPPER,,,)", status: 400, message: "invalid reference format"},
		{name: "create without source", method: "POST", target: "/images/create", status: 400, message: "fromImage or fromSrc is required"},
		{name: "import", method: "POST", target: "/images/create?fromSrc=-&repo=r&tag=t&message=m&changes=ENV+A%3D1&changes=CMD+x", body: "ROOTFS",
			call: `ImageImport(-,r,t,m,["ENV A=1" "CMD x"],ROOTFS)`, status: 200, contains: `{"status":"sha256:aa"}`},
		{name: "import bad change", method: "POST", target: "/images/create?fromSrc=-&changes=RUN+x", err: errdefs.ErrInvalidArgument.WithMessage("run is not a valid change command"),
			call: `ImageImport(-,,,,["RUN x"],)`, status: 400, message: "run is not a valid change command"},
		{name: "load quiet by default", method: "POST", target: "/images/load", body: "ARCHIVE", call: "ImageLoad(true,ARCHIVE)", status: 200,
			contains: `{"stream":"Loaded image: x:1\n"}`},
		{name: "load verbose", method: "POST", target: "/images/load?quiet=0", call: "ImageLoad(false,)", status: 200},
		{name: "save one", method: "GET", target: "/images/reg:5000/a:1/get", call: `ImageSave(["reg:5000/a:1"])`, status: 200, contains: "TAR", ctype: "application/x-tar"},
		{name: "save many", method: "GET", target: "/images/get?names=a&names=b%2Fc", call: `ImageSave(["a" "b/c"])`, status: 200, contains: "TAR"},
		{name: "save missing", method: "GET", target: "/images/get?names=x", err: errdefs.ErrNotFound.WithMessage("No such image: x"),
			call: `ImageSave(["x"])`, status: 404, message: "No such image: x"},
		{name: "login", method: "POST", target: "/auth", header: map[string]string{"Content-Type": "application/json"},
			body: `{"username":"u","password":"p","serveraddress":"127.0.0.1:5000"}`, call: "RegistryLogin(u,p,127.0.0.1:5000)", status: 200,
			contains: `{"Status":"Login Succeeded"}`},
		{name: "login refused", method: "POST", target: "/auth", header: map[string]string{"Content-Type": "application/json"}, body: `{"username":"u"}`, err: fmt.Errorf("unauthorized: bad password%.0w", errdefs.ErrUnauthenticated),
			call: "RegistryLogin(u,,)", status: 401, message: "unauthorized: bad password"},
		{name: "distribution", method: "GET", target: "/v1.47/distribution/127.0.0.1:5000/library/busybox:1/json", header: map[string]string{"X-Registry-Auth": goodAuth},
			call: "DistributionInspect(127.0.0.1:5000/library/busybox:1,u,p)", status: 200, ctype: "application/json",
			contains: `{"Descriptor":{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:aa","size":9},"Platforms":[{"architecture":"amd64","os":"linux"}]}`},
		{name: "distribution ignores bad auth", method: "GET", target: "/distribution/busybox/json", header: map[string]string{"X-Registry-Auth": "%%%"},
			call: "DistributionInspect(busybox,,)", status: 200},
		{name: "distribution not found", method: "GET", target: "/distribution/busybox:nope/json", err: fmt.Errorf("manifest unknown: manifest unknown%.0w", errdefs.ErrNotFound),
			call: "DistributionInspect(busybox:nope,,)", status: 404, message: "manifest unknown: manifest unknown"},
		{name: "distribution without json", method: "GET", target: "/distribution/busybox", status: 404, message: "page not found"},
		{name: "distribution without name", method: "GET", target: "/distribution/json", status: 404, message: "page not found"},
		{name: "search", method: "GET", target: "/images/search?term=127.0.0.1:5000/busy&limit=5&filters=%7B%22stars%22%3A%5B%223%22%5D%7D",
			header: map[string]string{"X-Registry-Auth": goodAuth}, call: `SearchImages(127.0.0.1:5000/busy,5,{"stars":["3"]},u,p)`, status: 200, ctype: "application/json",
			contains: `[{"star_count":3,"is_official":false,"name":"127.0.0.1:5000/library/busybox","is_automated":false,"description":""}]`},
		{name: "search default limit, bad auth ignored", method: "GET", target: "/images/search?term=busybox", header: map[string]string{"X-Registry-Auth": "%%%"},
			call: "SearchImages(busybox,0,,,)", status: 200},
		{name: "search limit not a number", method: "GET", target: "/images/search?term=b&limit=x", status: 400,
			message: `invalid limit specified: strconv.Atoi: parsing "x": invalid syntax`},
		{name: "search negative limit", method: "GET", target: "/images/search?term=b&limit=-1", status: 400, message: "invalid limit specified"},
		{name: "search refused", method: "GET", target: "/images/search?term=b&limit=101", err: fmt.Errorf("limit 101 is outside the range of [1, 100]%.0w", errdefs.ErrInvalidArgument),
			call: "SearchImages(b,101,,,)", status: 400, message: "limit 101 is outside the range of [1, 100]"},
		{name: "login bad body", method: "POST", target: "/auth", header: map[string]string{"Content-Type": "application/json"}, body: `{`, status: 400, message: "invalid JSON: unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &imageFake{err: tc.err}
			s := New(fake, Options{Logger: testLogger(t)})
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if fake.call != tc.call {
				t.Errorf("backend call %q, want %q", fake.call, tc.call)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if tc.ctype != "" && rec.Header().Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if tc.message != "" {
				var e common.ErrorResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Message != tc.message {
					t.Errorf("error body %s, want message %q", rec.Body, tc.message)
				}
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body %s does not contain %s", rec.Body, tc.contains)
			}
		})
	}
}

// TestImageInspectLegacyContainerConfig: before API 1.45 Docker sends
// Container and ContainerConfig (an empty config when the image records
// none), which docker-compose v1 indexes when it recreates a container;
// from 1.45 on it sends neither.
func TestImageInspectLegacyContainerConfig(t *testing.T) {
	s := New(&imageFake{}, Options{Logger: testLogger(t)})
	for _, tc := range []struct {
		target string
		want   map[string]string // field → raw JSON; "" for absent
	}{
		{"/v1.41/images/committed/json", map[string]string{"Container": `"c1"`, "VirtualSize": "7"}},
		{"/v1.44/images/x/json", map[string]string{"Container": `""`, "VirtualSize": ""}},
		{"/v1.45/images/committed/json", map[string]string{"Container": "", "ContainerConfig": "", "VirtualSize": ""}},
		{"/images/committed/json", map[string]string{"Container": "", "ContainerConfig": ""}},
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
		var got map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%s: %d %s (%v)", tc.target, rec.Code, rec.Body, err)
		}
		for k, want := range tc.want {
			if string(got[k]) != want {
				t.Errorf("%s: %s = %s, want %q", tc.target, k, got[k], want)
			}
		}
		if _, ok := tc.want["ContainerConfig"]; ok {
			continue
		}
		var cc *container.Config
		if err := json.Unmarshal(got["ContainerConfig"], &cc); err != nil || cc == nil {
			t.Errorf("%s: ContainerConfig %s is not an object", tc.target, got["ContainerConfig"])
		} else if strings.Contains(tc.target, "committed") && cc.Volumes == nil {
			t.Errorf("%s: ContainerConfig %s lost the image's", tc.target, got["ContainerConfig"])
		}
	}
}

// A save that fails after the first byte drops the connection rather than
// end a truncated archive cleanly.
func TestImageSaveFailureMidStream(t *testing.T) {
	s := New(&midStreamFailure{}, Options{Logger: testLogger(t)})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/images/x/get")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil || resp.StatusCode != 200 || string(body) != "PARTIAL" {
		t.Errorf("status %d, body %q, read error %v: want a broken 200", resp.StatusCode, body, err)
	}
}

type midStreamFailure struct{ fakeBackend }

func (midStreamFailure) ImageSave(_ context.Context, _ []string, _ []ocispec.Platform, w io.Writer) error {
	io.WriteString(w, "PARTIAL")
	w.(http.Flusher).Flush()
	return fmt.Errorf("disk on fire")
}

// FuzzImageRoute sends arbitrary paths under /images/: every one is routed
// to one operation with the name before its last segment, or answered 404.
func FuzzImageRoute(f *testing.F) {
	for _, p := range []string{"busybox/json", "a/b:c/history", "sha256:abc/get", "x", "/json", "a//json", "%2F/json", "json/json"} {
		f.Add("GET", p)
		f.Add("DELETE", p)
		f.Add("POST", p)
	}
	f.Fuzz(func(t *testing.T, method, rest string) {
		if method != "GET" && method != "POST" && method != "DELETE" {
			return
		}
		req, err := http.NewRequest(method, "http://x/images/"+rest, nil)
		if err != nil {
			return
		}
		fake := &imageFake{}
		s := New(fake, Options{})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if fake.call != "" && rec.Code >= 500 {
			t.Fatalf("%s /images/%s: %d %s", method, rest, rec.Code, rec.Body)
		}
		if fake.call == "" && rec.Code != 404 && rec.Code != 301 && rec.Code != 307 && rec.Code != 501 && rec.Code != 400 {
			t.Fatalf("%s /images/%s: no backend call but %d %s", method, rest, rec.Code, rec.Body)
		}
	})
}
