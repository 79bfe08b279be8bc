package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/common"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/images"
)

// The commit half of noContainers, and push for the image fakes.

func (noContainers) ContainerCommit(context.Context, engine.CommitRequest) (string, error) {
	return "", errNoContainers
}
func (noContainers) ContainerChanges(context.Context, string) ([]containertypes.FilesystemChange, error) {
	return nil, errNoContainers
}
func (noContainers) ContainerExport(context.Context, string) (io.ReadCloser, error) {
	return nil, errNoContainers
}
func (noContainers) ImagePush(context.Context, images.PushRequest, func(jsonstream.Message)) error {
	return errNoContainers
}

// commitFake records the call a request made, as "Method(args)".
type commitFake struct {
	fakeBackend
	call    string
	err     error
	midFail bool // export fails after its first bytes
}

func (f *commitFake) record(format string, args ...any) error {
	f.call = fmt.Sprintf(format, args...)
	return f.err
}

func (f *commitFake) ContainerCommit(_ context.Context, req engine.CommitRequest) (string, error) {
	cfg := "nil"
	if req.Config != nil {
		cfg = fmt.Sprintf("%q", req.Config.Cmd)
	}
	return "sha256:abc", f.record("ContainerCommit(%s,%s,%s,%s,%s,%v,%q,%s)", req.Container, req.Repo, req.Tag, req.Comment, req.Author, req.Pause, req.Changes, cfg)
}

func (f *commitFake) ContainerChanges(_ context.Context, ref string) ([]containertypes.FilesystemChange, error) {
	if err := f.record("ContainerChanges(%s)", ref); err != nil {
		return nil, err
	}
	if ref == "clean" {
		return nil, nil
	}
	return []containertypes.FilesystemChange{{Path: "/a", Kind: containertypes.ChangeAdd}, {Path: "/b", Kind: containertypes.ChangeDelete}}, nil
}

func (f *commitFake) ContainerExport(_ context.Context, ref string) (io.ReadCloser, error) {
	if err := f.record("ContainerExport(%s)", ref); err != nil {
		return nil, err
	}
	if f.midFail {
		return io.NopCloser(io.MultiReader(strings.NewReader("PARTIAL"), errReader{})), nil
	}
	return io.NopCloser(strings.NewReader("TAR")), nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, fmt.Errorf("disk on fire") }

func (f *commitFake) ImagePush(_ context.Context, req images.PushRequest, progress func(jsonstream.Message)) error {
	if err := f.record("ImagePush(%s,%s,%s)", req.Name, req.Tag, req.Auth.Username); err != nil {
		return err
	}
	progress(jsonstream.Message{Status: "The push refers to repository [x]"})
	if req.Tag == "fail" {
		return errdefs.ErrUnauthenticated.WithMessage("authentication required")
	}
	return nil
}

func TestCommitRoutes(t *testing.T) {
	tests := []struct {
		name, method, target string
		header               map[string]string
		body                 string
		err                  error
		call                 string // the backend call made, "" for none
		status               int
		contains             string // body substring
		message              string // error message
	}{
		{name: "commit", method: "POST", target: "/v1.50/commit?container=abc123&repo=x/y&tag=1&comment=m&author=a&changes=CMD+x&changes=ENV+A%3Db",
			call: `ContainerCommit(abc123,x/y,1,m,a,true,["CMD x" "ENV A=b"],nil)`, status: 201, contains: `{"Id":"sha256:abc"}`},
		{name: "commit without pause", method: "POST", target: "/commit?container=c&pause=0",
			call: `ContainerCommit(c,,,,,false,[],nil)`, status: 201},
		{name: "commit with a config", method: "POST", target: "/commit?container=c", header: map[string]string{"Content-Type": "application/json"},
			body: `{"Cmd":["echo","hi"]}`, call: `ContainerCommit(c,,,,,true,[],["echo" "hi"])`, status: 201},
		{name: "commit with a null config", method: "POST", target: "/commit?container=c", header: map[string]string{"Content-Type": "application/json"},
			body: `null`, call: `ContainerCommit(c,,,,,true,[],nil)`, status: 201},
		{name: "commit bad body", method: "POST", target: "/commit?container=c", header: map[string]string{"Content-Type": "application/json"},
			body: `{`, status: 400, message: "invalid JSON: unexpected EOF"},
		{name: "commit bad content type", method: "POST", target: "/commit?container=c", header: map[string]string{"Content-Type": "text/plain"},
			body: `{}`, status: 400, message: "unsupported Content-Type header (text/plain): must be 'application/json'"},
		{name: "commit missing container", method: "POST", target: "/commit?container=nope", err: errdefs.ErrNotFound.WithMessage("No such container: nope"),
			call: `ContainerCommit(nope,,,,,true,[],nil)`, status: 404, message: "No such container: nope"},
		{name: "commit bad repo", method: "POST", target: "/commit?container=c&repo=UPPER", err: errdefs.ErrInvalidArgument.WithMessage("invalid reference format"),
			call: `ContainerCommit(c,UPPER,,,,true,[],nil)`, status: 400, message: "invalid reference format"},
		{name: "changes", method: "GET", target: "/containers/c1/changes", call: "ContainerChanges(c1)", status: 200,
			contains: `[{"Kind":1,"Path":"/a"},{"Kind":2,"Path":"/b"}]`},
		{name: "no changes is an empty list", method: "GET", target: "/containers/clean/changes", call: "ContainerChanges(clean)", status: 200, contains: `[]`},
		{name: "changes missing", method: "GET", target: "/containers/x/changes", err: errdefs.ErrNotFound.WithMessage("No such container: x"),
			call: "ContainerChanges(x)", status: 404, message: "No such container: x"},
		{name: "export", method: "GET", target: "/containers/c1/export", call: "ContainerExport(c1)", status: 200, contains: "TAR"},
		{name: "export missing", method: "GET", target: "/containers/x/export", err: errdefs.ErrNotFound.WithMessage("No such container: x"),
			call: "ContainerExport(x)", status: 404, message: "No such container: x"},
		{name: "push", method: "POST", target: "/images/127.0.0.1:5000/a/b/push?tag=1", header: map[string]string{"X-Registry-Auth": "eyJ1c2VybmFtZSI6InUifQ=="},
			call: "ImagePush(127.0.0.1:5000/a/b,1,u)", status: 200, contains: `{"status":"The push refers to repository [x]"}`},
		{name: "push error after the stream began", method: "POST", target: "/images/a/push?tag=fail", call: "ImagePush(a,fail,)", status: 200,
			contains: `{"errorDetail":{"message":"authentication required"},"error":"authentication required"}`},
		{name: "push unknown image", method: "POST", target: "/images/a/push?tag=1", err: errdefs.ErrNotFound.WithMessage("An image does not exist locally with the tag: a"),
			call: "ImagePush(a,1,)", status: 404, message: "An image does not exist locally with the tag: a"},
		{name: "push bad auth", method: "POST", target: "/images/a/push", header: map[string]string{"X-Registry-Auth": "%%%"}, status: 400,
			message: "invalid X-Registry-Auth header: it must be base64url-encoded JSON with username, password and serveraddress"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &commitFake{err: tc.err}
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

// An export failing after its first bytes drops the connection rather
// than end a truncated archive cleanly.
func TestExportFailureMidStream(t *testing.T) {
	s := New(&commitFake{midFail: true}, Options{Logger: testLogger(t)})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/containers/c/export")
	if err == nil {
		defer resp.Body.Close()
		var body []byte
		body, err = io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("status %d, body %q: a complete answer, want a broken one", resp.StatusCode, body)
		}
	}
}
