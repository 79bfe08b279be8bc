package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{errdefs.ErrInvalidArgument, 400},
		{fmt.Errorf("bad name: %w", errdefs.ErrInvalidArgument), 400},
		{errdefs.ErrFailedPrecondition, 400},
		{errdefs.ErrNotFound, 404},
		{fmt.Errorf("container %q: %w", "x", errdefs.ErrNotFound), 404},
		{errdefs.ErrConflict, 409},
		{errdefs.ErrAlreadyExists, 409},
		{errdefs.ErrNotModified, 304},
		{errdefs.ErrUnauthenticated, 401},
		{errdefs.ErrPermissionDenied, 403},
		{errdefs.ErrResourceExhausted, 429},
		{errdefs.ErrUnavailable, 503},
		{errdefs.ErrNotImplemented, 501},
		{errdefs.ErrInternal, 500},
		{errors.New("plain"), 500},
		// The outermost class wins: a handler may re-class a cause.
		{fmt.Errorf("%w: %w", errdefs.ErrConflict, fmt.Errorf("inner: %w", errdefs.ErrNotFound)), 409},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			if got := errorStatus(tc.err); got != tc.want {
				t.Errorf("errorStatus(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	tests := []struct {
		err         error
		status      int
		body, ctype string
	}{
		{errdefs.ErrNotFound.WithMessage("No such image: x"), 404, `{"message":"No such image: x"}` + "\n", "application/json"},
		{errors.New("a <b> & c"), 500, `{"message":"a <b> & c"}` + "\n", "application/json"},
		{errdefs.ErrNotModified.WithMessage("container already started"), 304, "", ""},
		// A class put at the end of a message by %w is not part of
		// Docker's message; a cause's own words stay.
		{fmt.Errorf("invalid mode: zz: %w", errdefs.ErrInvalidArgument), 400, `{"message":"invalid mode: zz"}` + "\n", "application/json"},
		{fmt.Errorf("image mounts: %w", errdefs.ErrNotImplemented), 501, `{"message":"image mounts"}` + "\n", "application/json"},
		{fmt.Errorf("reading x: %w: %w", errors.New("open x: permission denied"), errdefs.ErrPermissionDenied), 403,
			`{"message":"reading x: open x: permission denied"}` + "\n", "application/json"},
		{fmt.Errorf("lookup: %w", errors.New("name: invalid argument")), 500, `{"message":"lookup: name: invalid argument"}` + "\n", "application/json"},
		{fmt.Errorf("%w: no such thing", errdefs.ErrNotFound), 404, `{"message":"not found: no such thing"}` + "\n", "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			rec := httptest.NewRecorder()
			httpError(rec, tc.err)
			if rec.Code != tc.status || rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != tc.ctype {
				t.Errorf("got %d %q %q, want %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body,
					tc.status, tc.ctype, tc.body)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	type payload struct{ Name string }
	tests := []struct {
		name    string
		ctype   string
		body    io.Reader
		want    string
		wantErr string // substring; "" means success
		chunked bool
	}{
		{name: "ok", ctype: "application/json", body: strings.NewReader(`{"Name":"x"}`), want: "x"},
		{name: "ok with charset", ctype: "application/json; charset=utf-8", body: strings.NewReader(`{"Name":"x"}`), want: "x"},
		{name: "ok chunked", ctype: "application/json", body: strings.NewReader(`{"Name":"y"}`), chunked: true, want: "y"},
		{name: "empty body no type", body: nil, want: ""},
		{name: "empty body json type", ctype: "application/json", body: nil, want: ""},
		{name: "bad json", ctype: "application/json", body: strings.NewReader(`{"Name":`), wantErr: "invalid JSON"},
		{name: "wrong type", ctype: "application/json", body: strings.NewReader(`{"Name":1}`), wantErr: "invalid JSON"},
		{name: "trailing data", ctype: "application/json", body: strings.NewReader(`{"Name":"x"} {}`), wantErr: "unexpected content after JSON"},
		{name: "text content type", ctype: "text/plain", body: strings.NewReader(`{"Name":"x"}`), wantErr: "unsupported Content-Type header (text/plain)"},
		{name: "body without content type", body: strings.NewReader(`{"Name":"x"}`), wantErr: "malformed Content-Type header"},
		{name: "too large", ctype: "application/json",
			body:    io.MultiReader(strings.NewReader(`{"Name":"`), bytes.NewReader(bytes.Repeat([]byte("a"), maxJSONBody)), strings.NewReader(`"}`)),
			chunked: true, wantErr: "request body larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/containers/create", tc.body)
			if tc.chunked {
				req.ContentLength = -1
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			var p payload
			err := decodeJSON(httptest.NewRecorder(), req, &p)
			if tc.wantErr == "" {
				if err != nil || p.Name != tc.want {
					t.Fatalf("got %q, %v; want %q, nil", p.Name, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("err %v is not InvalidArgument", err)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := writeJSON(rec, http.StatusCreated, map[string]string{"Id": "a&b"}); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Body.String() != `{"Id":"a&b"}`+"\n" {
		t.Errorf("got %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}

func TestQueryBool(t *testing.T) {
	tests := []struct {
		query       string
		want, wantD bool // queryBool, queryBoolDefault(def=true)
	}{
		{"all=1", true, true},
		{"all=true", true, true},
		{"all=True", true, true},
		{"all=yes", true, true},
		{"all=0", false, false},
		{"all=false", false, false},
		{"all=FALSE", false, false},
		{"all=no", false, false},
		{"all=none", false, false},
		{"all=", false, false},
		{"all=%200%20", false, false},
		{"", false, true},
		{"other=1", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/containers/json?"+tc.query, nil)
			if got := queryBool(r, "all"); got != tc.want {
				t.Errorf("queryBool = %v, want %v", got, tc.want)
			}
			if got := queryBoolDefault(r, "all", true); got != tc.wantD {
				t.Errorf("queryBoolDefault = %v, want %v", got, tc.wantD)
			}
		})
	}
}

// TestRequestLog checks the one debug line per request, and that it carries
// no header: X-Registry-Auth holds credentials.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := New(&fakeBackend{}, Options{Logger: log})
	req := httptest.NewRequest(http.MethodGet, "/v1.41/info", nil)
	req.Header.Set("X-Registry-Auth", "c2VjcmV0LXRva2Vu")
	req.Header.Set("Authorization", "Bearer sekrit")
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)

	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=DEBUG") ||
		!strings.Contains(lines[0], "path=/v1.41/info") || !strings.Contains(lines[0], "status=200") {
		t.Errorf("want one debug line for GET /v1.41/info with status 200, got:\n%s", out)
	}
	for _, secret := range []string{"c2VjcmV0LXRva2Vu", "sekrit"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains header value %q:\n%s", secret, out)
		}
	}
}
