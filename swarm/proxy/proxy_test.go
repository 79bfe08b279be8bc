package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
)

// Outside any swarm nothing starts: requests but init and join are
// ErrNotRunning (the engine answers them), /info is inactive, and
// without the binary init is a NotImplemented error.
func TestNotRunning(t *testing.T) {
	dir := t.TempDir()
	p := New(Options{Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state")})
	for _, path := range []string{"/nodes", "/services", "/swarm"} {
		err := p.Forward(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		if !errors.Is(err, ErrNotRunning) {
			t.Errorf("GET %s: %v, want ErrNotRunning", path, err)
		}
	}
	if st := p.Info(context.Background()); st.LocalNodeState != swarm.LocalNodeStateInactive {
		t.Errorf("Info = %+v", st)
	}
	err := p.Forward(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/swarm/init", nil))
	if !errdefs.IsNotImplemented(err) {
		t.Errorf("init without hutch-swarm: %v, want NotImplemented", err)
	}
	if p.HasState() {
		t.Error("HasState without a state file")
	}
	if err := os.MkdirAll(p.opt.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.opt.Root, stateFile), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !p.HasState() {
		t.Error("HasState with a state file")
	}
	// No binary: still nothing to start.
	if err := p.Resume(context.Background()); err != nil || p.Running() {
		t.Errorf("Resume without a binary: %v, running %v", err, p.Running())
	}
}

// A held response keeps what a flushing reverse proxy writes (status,
// headers, body) and hands all of it on only when told.
func TestHeldResponse(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Left", "yes")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("bye"))
	}))
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	held := &heldResponse{header: http.Header{}}
	rp.ServeHTTP(held, httptest.NewRequest(http.MethodPost, "/swarm/leave", nil))
	if held.status != http.StatusOK || held.body.String() != "bye" {
		t.Fatalf("held %d %q", held.status, held.body.String())
	}
	rec := httptest.NewRecorder()
	held.writeTo(rec)
	if rec.Code != http.StatusOK || rec.Header().Get("X-Left") != "yes" || rec.Body.String() != "bye" {
		t.Errorf("written %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
}
