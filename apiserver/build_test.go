package apiserver

import (
	"context"
	"encoding/base64"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/build"
)

// fakeBuild records the request; its Dockerfile content says how it
// ends: "fail-early" before any output, "fail-late" after a step.
type fakeBuild struct {
	fakeBackend
	got   *engine.BuildRequest
	calls int
}

func (f *fakeBuild) Build(_ context.Context, req engine.BuildRequest, body io.Reader, out build.Output) (string, error) {
	f.calls++
	f.got = &req
	b, _ := io.ReadAll(body)
	switch string(b) {
	case "fail-early":
		return "", errdefs.ErrInvalidArgument.WithMessage("dockerfile parse error")
	case "fail-late":
		out.Stream("Step 1/2 : FROM x\n")
		return "", errdefs.ErrInvalidArgument.WithMessage("The command 'false' returned a non-zero code: 1")
	case "fail-run":
		out.Stream("Step 1/2 : FROM x\n")
		return "", &build.Error{Msg: "The command '/bin/sh -c exit 3' returned a non-zero code: 3", Code: 3}
	}
	out.Stream("Step 1/1 : FROM x\n")
	out.ImageID("sha256:abc")
	return "sha256:abc", nil
}

func TestImageBuild(t *testing.T) {
	for _, tc := range []struct {
		query, body, want string
		status            int
		called            bool
	}{
		{"t=a:1&t=b&buildargs=" + url.QueryEscape(`{"X":"1","Y":null}`) + "&labels=" + url.QueryEscape(`{"l":"v"}`) + "&rm=0&forcerm=1&dockerfile=sub/D&target=s&extrahosts=h:1.2.3.4",
			"ok", `{"stream":"Step 1/1 : FROM x\n"}` + "\n" + `{"aux":{"ID":"sha256:abc"}}`, 200, true},
		{"", "fail-early", `{"message":"dockerfile parse error"}`, 400, true},
		{"", "fail-late", `{"errorDetail":{"message":"The command 'false' returned a non-zero code: 1"},"error":"The command 'false' returned a non-zero code: 1"}`, 200, true},
		// A failed RUN's exit code goes in errorDetail, as in Docker
		// (the docker CLI exits with it).
		{"", "fail-run", `{"errorDetail":{"code":3,"message":"The command '/bin/sh -c exit 3' returned a non-zero code: 3"},"error":"The command '/bin/sh -c exit 3' returned a non-zero code: 3"}`, 200, true},
		{"t=Bad::Ref", "ok", `invalid reference format: Bad::Ref`, 400, false},
		{"t=a@sha256:" + strings.Repeat("a", 64), "ok", `cannot hold a digest`, 400, false},
		{"buildargs=notjson", "ok", `invalid buildargs`, 400, false},
		{"labels=%5B%5D", "ok", `invalid labels`, 400, false},
		{"version=2", "ok", `BuildKit is not available`, 501, false},
		{"platform=windows/amd64", "ok", `is not supported`, 400, false},
	} {
		f := &fakeBuild{}
		s := New(f, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1.50/build?"+tc.query, strings.NewReader(tc.body)))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("POST /build?%s = %d\n%s\nwant %d with\n%s", tc.query, rec.Code, rec.Body, tc.status, tc.want)
		}
		if (f.calls > 0) != tc.called {
			t.Errorf("POST /build?%s: engine called %d times", tc.query, f.calls)
		}
	}
	// Credentials by registry for FROM's pulls; a bad header is a 400.
	f := &fakeBuild{}
	s := New(f, Options{Logger: testLogger(t)})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/build", strings.NewReader("ok"))
	req.Header.Set("X-Registry-Config", "%%%")
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 400 || f.calls != 0 || !strings.Contains(rec.Body.String(), "invalid X-Registry-Config") {
		t.Errorf("bad X-Registry-Config: %d %s", rec.Code, rec.Body)
	}
	req = httptest.NewRequest("POST", "/build", strings.NewReader("ok"))
	req.Header.Set("X-Registry-Config", base64.URLEncoding.EncodeToString([]byte(`{"localhost:5000":{"username":"u","password":"p"}}`)))
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	if f.got == nil || f.got.Auth["localhost:5000"].Password != "p" {
		t.Errorf("X-Registry-Config: %+v", f.got)
	}
	q := "t=a:1&t=b&buildargs=" + url.QueryEscape(`{"X":"1","Y":null}`) + "&labels=" + url.QueryEscape(`{"l":"v"}`) + "&rm=0&forcerm=1&q=1&pull=1&nocache=1&dockerfile=sub/D&target=s&extrahosts=h:1.2.3.4,g:5.6.7.8&networkmode=host&remote=https%3A%2F%2Fexample.com%2Fx.git%23main%3Asub"
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/build?"+q, strings.NewReader("ok")))
	r := f.got
	if r == nil || strings.Join(r.Tags, ",") != "a:1,b" || *r.BuildArgs["X"] != "1" || r.BuildArgs["Y"] != nil || r.Labels["l"] != "v" ||
		r.Remove || !r.ForceRemove || !r.Quiet || !r.Pull || !r.NoCache || r.DockerfileName != "sub/D" || r.Target != "s" ||
		strings.Join(r.ExtraHosts, " ") != "h:1.2.3.4 g:5.6.7.8" || r.NetworkMode != "host" || r.Remote != "https://example.com/x.git#main:sub" {
		t.Errorf("request = %+v", r)
	}
}
