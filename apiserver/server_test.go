package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/common"
	"github.com/moby/moby/api/types/system"
)

// fakeBackend answers the system calls with fixed data, or fails/panics when
// told to.
type fakeBackend struct {
	noContainers
	err   error // returned by every call
	panic string
}

func (f *fakeBackend) fail() error {
	if f.panic != "" {
		panic(f.panic)
	}
	return f.err
}

func (f *fakeBackend) Info(context.Context) (*system.Info, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &system.Info{ID: "fake-id", Name: "fakehost", OSType: "linux", ServerVersion: "0.0.0-test"}, nil
}

func (f *fakeBackend) Version(context.Context) (*system.VersionResponse, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &system.VersionResponse{Version: "0.0.0-test", Os: "linux", Arch: "amd64", APIVersion: "bogus"}, nil
}

var _ Backend = (*fakeBackend)(nil)

const tooOld123 = "client version 1.23 is too old. Minimum supported API version is 1.24, please upgrade your client to a newer version"

func TestHandler(t *testing.T) {
	pingHeaders := map[string]string{
		"Api-Version":         MaxAPIVersion,
		"Ostype":              "linux",
		"Docker-Experimental": "false",
		"Builder-Version":     "1",
		"Swarm":               "inactive",
		"Cache-Control":       "no-cache, no-store, must-revalidate",
		"Pragma":              "no-cache",
		"Server":              "hutch/1.2.3 (linux)",
		"Content-Type":        "text/plain; charset=utf-8",
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}

	tests := []struct {
		name         string
		method       string
		target       string
		host         string
		agent        string // User-Agent
		backend      fakeBackend
		experimental bool
		status       int
		body         string // exact body, unless empty and contains or message is set
		contains     string // body substring
		message      string // JSON error message (implies Content-Type application/json)
		headers      map[string]string
	}{
		{name: "ping GET", method: "GET", target: "/_ping", status: 200, body: "OK", headers: pingHeaders},
		{name: "ping HEAD", method: "HEAD", target: "/_ping", status: 200, body: "",
			headers: map[string]string{"Api-Version": MaxAPIVersion, "Content-Length": "0", "Ostype": "linux"}},
		{name: "ping versioned", method: "GET", target: "/v1.41/_ping", status: 200, body: "OK", headers: pingHeaders},
		{name: "ping experimental", method: "GET", target: "/_ping", experimental: true, status: 200, body: "OK",
			headers: map[string]string{"Docker-Experimental": "true"}},
		{name: "version max", method: "GET", target: "/v1.56/version", status: 200,
			contains: `"Version":"0.0.0-test","ApiVersion":"1.56","MinAPIVersion":"1.24"`, headers: jsonCT},
		{name: "version min", method: "GET", target: "/v1.24/version", status: 200, contains: `"ApiVersion":"1.56"`},
		{name: "version to compose v1", method: "GET", target: "/version", agent: "docker-compose/1.29.2 docker-py/5.0.3 Linux/6.1.0", status: 200,
			contains: `"ApiVersion":"1.41","MinAPIVersion":"1.24"`},
		{name: "version to compose v2", method: "GET", target: "/version", agent: "compose/2.40.3", status: 200, contains: `"ApiVersion":"1.56"`},
		{name: "version to docker-py", method: "GET", target: "/version", agent: "docker-sdk-python/5.0.3", status: 200, contains: `"ApiVersion":"1.56"`},
		{name: "version too old", method: "GET", target: "/v1.23/version", status: 400, body: tooOld123 + "\n",
			headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "Api-Version": MaxAPIVersion}},
		{name: "version major only too old", method: "GET", target: "/v1/version", status: 400,
			contains: "client version 1 is too old"},
		{name: "info too new", method: "GET", target: "/v1.99/info", status: 400,
			message: "client version 1.99 is too new. Maximum supported API version is 1.56"},
		{name: "info patch above max", method: "GET", target: "/v1.56.1/info", status: 400,
			message: "client version 1.56.1 is too new. Maximum supported API version is 1.56"},
		{name: "info non-numeric version", method: "GET", target: "/vabc/info", status: 404, message: "page not found"},
		{name: "version prefix only", method: "GET", target: "/v1.41", status: 404, message: "page not found"},
		{name: "unknown route", method: "GET", target: "/nope", status: 404, message: "page not found"},
		{name: "unknown versioned route too old", method: "GET", target: "/v1.23/nope", status: 404, message: "page not found"},
		{name: "wrong method", method: "POST", target: "/version", status: 404, message: "page not found"},
		{name: "HEAD on GET route", method: "HEAD", target: "/v1.41/info", status: 404, message: "page not found"},
		{name: "options", method: "OPTIONS", target: "/v1.41/containers/json", status: 200, body: ""},
		{name: "any host", method: "GET", target: "/info", host: "evil.example.com:8080", status: 200,
			contains: `"Name":"fakehost"`, headers: jsonCT},
		{name: "backend not found", method: "GET", target: "/info",
			backend: fakeBackend{err: fmt.Errorf("no such thing: %w", errdefs.ErrNotFound)},
			status:  404, message: "no such thing"},
		{name: "backend conflict", method: "GET", target: "/v1.41/version",
			backend: fakeBackend{err: errdefs.ErrConflict.WithMessage("busy")}, status: 409, message: "busy"},
		{name: "backend unclassed", method: "GET", target: "/info",
			backend: fakeBackend{err: errors.New("disk on fire")}, status: 500, message: "disk on fire"},
		{name: "backend panic", method: "GET", target: "/info", backend: fakeBackend{panic: "boom"},
			status: 500, message: "internal server error: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&tc.backend, Options{Version: "1.2.3", Experimental: tc.experimental, Logger: testLogger(t)})
			req := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			req.Header.Set("User-Agent", tc.agent)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)

			if res.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d; body %q", res.StatusCode, tc.status, body)
			}
			for k, v := range tc.headers {
				if got := res.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			switch {
			case tc.message != "":
				if ct := res.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				var e common.ErrorResponse
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatalf("error body %q is not JSON: %v", body, err)
				}
				if e.Message != tc.message {
					t.Errorf("message = %q, want %q", e.Message, tc.message)
				}
			case tc.contains != "":
				if !strings.Contains(string(body), tc.contains) {
					t.Errorf("body %q does not contain %q", body, tc.contains)
				}
			default:
				if string(body) != tc.body {
					t.Errorf("body = %q, want %q", body, tc.body)
				}
			}
		})
	}
}

// TestAPIVersionInContext checks the version handlers see, through a route
// added to a Server the way later endpoints are.
func TestAPIVersionInContext(t *testing.T) {
	tests := []struct{ target, want string }{
		{"/echo", MaxAPIVersion},
		{"/v1.24/echo", "1.24"},
		{"/v1.41/echo", "1.41"},
		{"/v1.56/echo", "1.56"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			s := New(&fakeBackend{}, Options{})
			mux := http.NewServeMux()
			mux.Handle("GET /echo", s.endpoint(route{http.MethodGet, "/echo", func(w http.ResponseWriter, r *http.Request) error {
				return writeJSON(w, http.StatusOK, APIVersion(r.Context()))
			}}))
			rec := httptest.NewRecorder()
			s.logRecover(stripVersion(mux)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
			var got string
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("status %d body %q: %v", rec.Code, rec.Body, err)
			}
			if got != tc.want {
				t.Errorf("APIVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPathWildcardsAfterPrefix checks that stripping the version keeps
// escaped slashes inside a path wildcard, as later routes need for names.
func TestPathWildcardsAfterPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{name}/json", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.PathValue("name"))
	})
	h := stripVersion(mux)
	tests := []struct{ target, want string }{
		{"/things/a/json", "a"},
		{"/v1.41/things/a/json", "a"},
		{"/v1.41/things/a%2Fb/json", "a/b"},
		{"/things/a%2Fb/json", "a/b"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, nil))
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Errorf("got %d %q, want 200 %q", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

// testLogger sends the server's log to the test log, so that a failing test
// shows the panic stacks and request lines.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// TestHandlerFailureAfterResponse checks what happens once a response has
// started: a returned error is only logged, and a panic aborts the connection
// (http.ErrAbortHandler) instead of appending a second response.
func TestHandlerFailureAfterResponse(t *testing.T) {
	tests := []struct {
		name      string
		h         apiFunc
		wantPanic bool
	}{
		{"error", func(w http.ResponseWriter, _ *http.Request) error {
			_, _ = io.WriteString(w, "partial")
			return errdefs.ErrNotFound
		}, false},
		{"panic", func(w http.ResponseWriter, _ *http.Request) error {
			_, _ = io.WriteString(w, "partial")
			panic("boom")
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(&fakeBackend{}, Options{Logger: testLogger(t)})
			mux := http.NewServeMux()
			mux.Handle("GET /stream", s.endpoint(route{http.MethodGet, "/stream", tc.h}))
			rec := httptest.NewRecorder()
			var p any
			func() {
				defer func() { p = recover() }()
				s.logRecover(mux).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stream", nil))
			}()
			if tc.wantPanic != (p == http.ErrAbortHandler) || (!tc.wantPanic && p != nil) {
				t.Errorf("panic = %v, want abort: %v", p, tc.wantPanic)
			}
			if rec.Code != http.StatusOK || rec.Body.String() != "partial" {
				t.Errorf("response = %d %q, want 200 %q", rec.Code, rec.Body, "partial")
			}
		})
	}
}

// TestClientGoneNotLogged checks that a stream the client stopped reading
// (its request context canceled) is not logged as a handler failure, while
// another failure after the response started still is.
func TestClientGoneNotLogged(t *testing.T) {
	for _, gone := range []bool{true, false} {
		var log bytes.Buffer
		s := New(&fakeBackend{}, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		ctx, cancel := context.WithCancel(context.Background())
		h := s.endpoint(route{http.MethodGet, "/stream", func(w http.ResponseWriter, r *http.Request) error {
			_, _ = io.WriteString(w, "partial")
			if gone {
				cancel()
				<-r.Context().Done()
				return r.Context().Err()
			}
			return context.Canceled // not the client's: its context is live
		}})
		mux := http.NewServeMux()
		mux.Handle("GET /stream", h)
		s.logRecover(mux).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/stream", nil).WithContext(ctx))
		cancel()
		if logged := strings.Contains(log.String(), "API handler failed"); logged == gone {
			t.Errorf("client gone %v: log %q", gone, log.String())
		}
	}
}
