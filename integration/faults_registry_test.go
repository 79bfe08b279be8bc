//go:build integration

package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// pausingProxy serves registryAddr's API. The first GET of the blob is
// relayed until half of it went out, then held: paused is closed, and the
// relay goes on once resume is closed, with whatever the registry still
// sends. It makes "the registry dies in the middle of a layer" happen at a
// known moment. A dead registry cuts the daemon's connections (the proxy
// answers no 502 of its own).
func pausingProxy(t *testing.T, registryAddr, blob string) (addr string, paused <-chan struct{}, resume chan<- struct{}) {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: registryAddr}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	pausedCh, resumeCh := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+blob) {
			once.Do(func() { first = true })
		}
		if !first {
			proxy.ServeHTTP(w, r)
			return
		}
		resp, err := http.Get(target.String() + r.URL.Path)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		defer resp.Body.Close()
		for _, h := range []string{"Content-Length", "Content-Type", "Docker-Content-Digest"} {
			w.Header().Set(h, resp.Header.Get(h))
		}
		w.WriteHeader(resp.StatusCode)
		io.CopyN(w, resp.Body, resp.ContentLength/2)
		w.(http.Flusher).Flush()
		close(pausedCh)
		<-resumeCh
		if _, err := io.Copy(w, resp.Body); err != nil {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-resumeCh:
		default:
			close(resumeCh)
		}
		srv.Close()
	})
	return strings.TrimPrefix(srv.URL, "http://"), pausedCh, resumeCh
}

// A registry killed with -9 in the middle of a layer: the pull fails with
// a clear error and leaves nothing (no image, no layer, no temporary
// blob); the registry comes back on the same port with the same storage,
// and the same pull, retried, succeeds.
func TestRegistryDiesMidPull(t *testing.T) {
	reg := startRegistry(t, "", "")
	// 40 MiB of random bytes: far more than the socket buffers between the
	// registry and the proxy hold, so the registry dies with most of the
	// layer unsent.
	img := bigImage(t, 40<<20, true)
	big := pushForLastLayer(t, img, reg.Addr+"/library/big:dies")
	proxyAddr, paused, resume := pausingProxy(t, reg.Addr, big.String())
	ref := proxyAddr + "/library/big:dies"
	d := startDaemon(t)
	ctx := context.Background()

	resp, err := d.Client(t).ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan string, 1)
	go func() {
		defer resp.Close()
		var last string
		for m, err := range resp.JSONMessages(ctx) {
			if err != nil {
				last = "stream error: " + err.Error()
				break
			}
			if m.Error != nil {
				last = m.Error.Message
			}
		}
		msgs <- last
	}()
	select {
	case <-paused:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the pull never reached the middle of the big layer\n%s", tail(d.Log(), 20))
	}
	reg.Kill()
	close(resume)
	var msg string
	select {
	case msg = <-msgs:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the pull did not end after the registry died\n%s", tail(d.Log(), 20))
	}
	if msg == "" {
		t.Fatal("the pull succeeded with the registry dead in the middle of a layer")
	}
	t.Logf("pull error: %s", msg)
	if !strings.Contains(msg, big.Hex[:12]) && !strings.Contains(msg, big.String()) {
		t.Errorf("the pull error does not name the layer %s: %q", big, msg)
	}
	if !strings.Contains(msg, "EOF") && !strings.Contains(msg, "connection") {
		t.Errorf("the pull error does not say the connection broke: %q", msg)
	}
	// A pull while the registry is down fails at once, naming it.
	if out, err := d.Docker(t, "pull", ref); err == nil || !strings.Contains(out, "Error response from daemon") || !strings.Contains(out, proxyAddr) {
		t.Errorf("docker pull from the dead registry: %v\n%s", err, out)
	}
	if got := must(t, d, "images", "-qa"); got != "" {
		t.Errorf("images after the failed pull: %q", got)
	}
	if got := storeLayers(t, d); len(got) != 0 {
		t.Errorf("layers after the failed pull: %q", got)
	}
	if left, _ := os.ReadDir(filepath.Join(d.Data, "hutch", "storage", "tmp")); len(left) != 0 {
		t.Errorf("temporary files after the failed pull: %v", left)
	}

	reg.Restart(t)
	if out, err := d.Docker(t, "pull", ref); err != nil {
		t.Fatalf("retrying the pull once the registry is back: %v\n%s\n%s", err, out, tail(d.Log(), 20))
	}
	if out, err := d.Docker(t, "run", "--rm", ref, "sh", "-c", "cat /data/big/* | wc -c"); err != nil || strings.TrimSpace(out) != "41943040" {
		t.Errorf("the retried pull's content: %v %q", err, out)
	}
}
