package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/api/types/jsonstream"
	mobyregistry "github.com/moby/moby/api/types/registry"
)

// testRegistry is go-containerregistry's in-process registry on 127.0.0.1,
// optionally behind basic auth and with chosen blobs failing.
type testRegistry struct {
	host     string
	user     string
	password string

	mu         sync.Mutex
	failBlobs  map[string]bool   // digest -> answer 404
	stallBlobs map[string]bool   // digest -> send 64 KiB, then hang until the client leaves
	fakeBlobs  map[string][]byte // digest -> answer these bytes instead
}

func newRegistry(t testing.TB, user, password string) *testRegistry {
	t.Helper()
	r := &testRegistry{user: user, password: password, failBlobs: map[string]bool{}, stallBlobs: map[string]bool{}, fakeBlobs: map[string][]byte{}}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.user || p != r.password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return
			}
		}
		r.mu.Lock()
		fail, stall := false, false
		for d := range r.failBlobs {
			fail = fail || strings.HasSuffix(req.URL.Path, "/blobs/"+d)
		}
		for d := range r.stallBlobs {
			stall = stall || strings.HasSuffix(req.URL.Path, "/blobs/"+d)
		}
		var fake []byte
		for d, b := range r.fakeBlobs {
			if strings.HasSuffix(req.URL.Path, "/blobs/"+d) {
				fake = b
			}
		}
		r.mu.Unlock()
		if fake != nil && req.Method == http.MethodGet {
			w.Header().Set("Content-Length", fmt.Sprint(len(fake)))
			_, _ = w.Write(fake)
			return
		}
		if stall && req.Method == http.MethodGet {
			w = &stallingWriter{ResponseWriter: w, ctx: req.Context(), left: 64 << 10}
		}
		if fail && req.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry"}]}`)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func (r *testRegistry) push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref := r.host + "/" + repoTag
	var opts []testimage.PushOption
	if r.user != "" {
		opts = append(opts, testimage.WithBasicAuth(r.user, r.password))
	}
	if err := testimage.Push(context.Background(), ref, img, opts...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// stallingWriter passes the first bytes of a response through, then blocks
// until the client goes away.
type stallingWriter struct {
	http.ResponseWriter
	ctx  context.Context
	left int
}

func (s *stallingWriter) Write(b []byte) (int, error) {
	if s.left <= 0 {
		<-s.ctx.Done()
		return 0, s.ctx.Err()
	}
	n := min(len(b), s.left)
	s.left -= n
	n, err := s.ResponseWriter.Write(b[:n])
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

func (r *testRegistry) stallBlob(d string) {
	r.mu.Lock()
	r.stallBlobs[d] = true
	r.mu.Unlock()
}

// fakeBlob serves data for blob d: content that does not match its digest.
func (r *testRegistry) fakeBlob(d string, data []byte) {
	r.mu.Lock()
	r.fakeBlobs[d] = data
	r.mu.Unlock()
}

func (r *testRegistry) failBlob(d string) {
	r.mu.Lock()
	r.failBlobs[d] = true
	r.mu.Unlock()
}

// pullLines pulls ref and returns the stream as compact lines.
func pullLines(t testing.TB, s *Store, ref string, opts PullOptions) (*Image, []string, error) {
	t.Helper()
	var lines []string
	img, err := s.Pull(context.Background(), ref, opts, func(m jsonstream.Message) { lines = append(lines, line(m)) })
	return img, lines, err
}

func digests(t testing.TB, img v1.Image) (manifest, config string, layers []string) {
	t.Helper()
	m, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	c, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, d.String())
	}
	return m.String(), c.String(), layers
}

// TestPullBusybox runs with hutch's layer fetcher and with containers/image
// copying the layers (the path of images the fetcher leaves alone): the
// stream must be the same.
func TestPullBusybox(t *testing.T) {
	t.Run("fetcher", func(t *testing.T) { testPullBusybox(t, false) })
	t.Run("containers-image", func(t *testing.T) { testPullBusybox(t, true) })
}

func testPullBusybox(t *testing.T, noFetcher bool) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	manifestDigest, configDigest, layers := digests(t, busybox)
	layerID := strings.TrimPrefix(layers[0], "sha256:")[:12]
	s := newStore(t, "")
	s.noFetcher = noFetcher

	start := time.Now()
	img, lines, err := pullLines(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatalf("pull: %v\n%s", err, strings.Join(lines, "\n"))
	}
	t.Logf("pulled busybox in %v with driver %s (single uid %v)", time.Since(start), s.Driver(), singleUID(t))

	// Docker's exact sequence, with however many "Downloading"/"Extracting"
	// updates the timing produced, always ending on the full size.
	var compact []string
	for _, l := range lines {
		if n := len(compact); n > 0 && sameStatus(compact[n-1], l, "Downloading", "Extracting") {
			compact[n-1] = l
			continue
		}
		compact = append(compact, l)
	}
	size := layerSize(t, busybox, 0)
	want := []string{
		"latest: Pulling from busybox",
		layerID + ": Pulling fs layer",
		fmt.Sprintf("%s: Downloading %d/%d", layerID, size, size),
		layerID + ": Verifying Checksum",
		layerID + ": Download complete",
		fmt.Sprintf("%s: Extracting %d/%d", layerID, size, size),
		layerID + ": Pull complete",
		"Digest: " + manifestDigest,
		"Status: Downloaded newer image for " + ref,
	}
	if got := strings.Join(compact, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("stream:\n%s\n\nwant (progress updates collapsed):\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if want := idByConfig(t, s, configDigest); img.ID != want {
		t.Errorf("ID = %s, want the manifest's digest %s", img.ID, want)
	}
	if !slices.Equal(img.RepoTags, []string{ref}) {
		t.Errorf("RepoTags = %v", img.RepoTags)
	}
	if !slices.Contains(img.RepoDigests, reg.host+"/busybox@"+manifestDigest) {
		t.Errorf("RepoDigests = %v, want %s", img.RepoDigests, manifestDigest)
	}
	checkRootfs(t, s, img.ID)
	if ls, err := s.Backend().Layers(); err != nil || len(ls) != 1 {
		t.Errorf("store has %d layers (%v), want 1", len(ls), err)
	}

	// Pulling again changes nothing and says so, without layer lines.
	_, lines, err = pullLines(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"latest: Pulling from busybox", "Digest: " + manifestDigest, "Status: Image is up to date for " + ref}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("second pull:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	// A new name for a stored image is "newer" for Docker, still without layers.
	other := reg.push(t, "busybox:other", busybox)
	img2, lines, err := pullLines(t, s, other, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"other: Pulling from busybox", "Digest: " + manifestDigest, "Status: Downloaded newer image for " + other}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") || img2.ID != img.ID {
		t.Errorf("pull of a second tag:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if got, err := s.Image(ref); err != nil || !slices.Equal(slices.Sorted(slices.Values(got.RepoTags)), []string{ref, other}) {
		t.Errorf("after both pulls RepoTags = %v, %v", got, err)
	}
}

func sameStatus(a, b string, statuses ...string) bool {
	for _, s := range statuses {
		pa, pb := strings.Index(a, ": "+s+" "), strings.Index(b, ": "+s+" ")
		if pa > 0 && pa == pb && a[:pa] == b[:pb] {
			return true
		}
	}
	return false
}

func layerSize(t testing.TB, img v1.Image, i int) int64 {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	n, err := ls[i].Size()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkRootfs mounts the image and looks at what extraction produced: the
// applet symlinks and a directory owned by another uid, kept with a full
// mapping and flattened to root in single-UID mode.
func checkRootfs(t *testing.T, s *Store, id string) {
	t.Helper()
	hexID := storedHex(t, s, id)
	root, err := s.Backend().MountImage(hexID, []string{"ro"}, "")
	if err != nil {
		t.Fatalf("mounting image: %v", err)
	}
	defer func() {
		if _, err := s.Backend().UnmountImage(hexID, true); err != nil {
			t.Errorf("unmounting image: %v", err)
		}
	}()
	if target, err := os.Readlink(filepath.Join(root, "bin/sh")); err != nil || target != "/bin/busybox" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	fi, err := os.Stat(filepath.Join(root, "home/user/.profile"))
	if err != nil {
		t.Fatal(err)
	}
	wantUID := uint32(testimage.OwnedUID)
	if singleUID(t) {
		wantUID = 0
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != wantUID {
		t.Errorf("home/user/.profile owned by %d, want %d", st.Uid, wantUID)
	}
}

func TestPullMultiLayer(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	multi, err := testimage.MultiLayer(4)
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, "")
	if _, _, err := pullLines(t, s, reg.push(t, "busybox:latest", busybox), PullOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, layers := digests(t, multi)
	img, lines, err := pullLines(t, s, reg.push(t, "multi:latest", multi), PullOptions{MaxConcurrentDownloads: 2})
	if err != nil {
		t.Fatal(err)
	}
	short := func(i int) string { return strings.TrimPrefix(layers[i], "sha256:")[:12] }
	first := []string{"latest: Pulling from multi", short(0) + ": Already exists"}
	for i := 1; i < len(layers); i++ {
		first = append(first, short(i)+": Pulling fs layer")
	}
	first = append(first, short(3)+": Waiting", short(4)+": Waiting")
	if got := strings.Join(lines[:len(first)], "\n"); got != strings.Join(first, "\n") {
		t.Errorf("stream starts:\n%s\nwant:\n%s", got, strings.Join(first, "\n"))
	}
	for i := 1; i < len(layers); i++ {
		if !slices.Contains(lines, short(i)+": Pull complete") {
			t.Errorf("no Pull complete for layer %d in\n%s", i, strings.Join(lines, "\n"))
		}
	}
	if slices.Contains(lines, short(0)+": Pull complete") {
		t.Errorf("the existing base layer was pulled again")
	}

	// containers/image found every layer the fetcher made: no copies.
	if ls, err := s.Backend().Layers(); err != nil || len(ls) != len(layers) {
		t.Errorf("store has %d layers (%v), the image %d", len(ls), err, len(layers))
	}

	root, err := s.Backend().MountImage(storedHex(t, s, img.ID), []string{"ro"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Backend().UnmountImage(storedHex(t, s, img.ID), true)
	if _, err := os.Stat(filepath.Join(root, "data/layer0.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("whiteout of data/layer0.txt not applied: %v", err)
	}
	for _, f := range []string{"data/layer1.txt", "data/layer3.txt", "bin/busybox"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestPullErrors(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	reg.push(t, "busybox:latest", busybox)
	s := newStore(t, "")
	tests := []struct {
		name    string
		ref     string
		opts    PullOptions
		class   error
		message string
	}{
		{"missing tag", reg.host + "/busybox:nope", PullOptions{}, errdefs.ErrNotFound,
			"manifest for " + reg.host + "/busybox:nope not found: manifest unknown: Unknown manifest"},
		{"missing repository", reg.host + "/nothere:latest", PullOptions{}, errdefs.ErrNotFound,
			"repository " + reg.host + "/nothere not found: name unknown: Unknown name"},
		{"bad reference", "Busybox", PullOptions{}, errdefs.ErrInvalidArgument,
			"invalid reference format: repository name (library/Busybox) must be lowercase"},
		{"bad platform", reg.host + "/busybox", PullOptions{Platform: "linux/"}, errdefs.ErrInvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, lines, err := pullLines(t, s, tt.ref, tt.opts)
			if !errors.Is(err, tt.class) {
				t.Fatalf("Pull(%s) = %v, %v; want %v", tt.ref, img, err, tt.class)
			}
			if tt.message != "" && err.Error() != tt.message {
				t.Errorf("message %q\n   want %q", err.Error(), tt.message)
			}
			if len(lines) != 0 {
				t.Errorf("progress was sent before the error: %q", lines)
			}
		})
	}
	assertEmpty(t, s)
}

func TestPullAuth(t *testing.T) {
	reg := newRegistry(t, "hutch", "s3cret")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "private/busybox:latest", busybox)
	s := newStore(t, "")
	// Without credentials, the refusal is Docker's "pull access denied":
	// the repository may as well not exist.
	_, _, err = pullLines(t, s, ref, PullOptions{})
	if !errdefs.IsNotFound(err) || err.Error() != "pull access denied for "+reg.host+"/private/busybox, repository does not exist or may require 'docker login': unauthorized: authentication required" {
		t.Errorf("anonymous pull = %v", err)
	}
	for _, auth := range []mobyregistry.AuthConfig{{Username: "hutch", Password: "wrong", ServerAddress: reg.host}} {
		t.Run("rejected "+auth.Username, func(t *testing.T) {
			_, _, err := pullLines(t, s, ref, PullOptions{Auth: auth})
			if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, errdefs.ErrUnknown) || errdefs.IsNotFound(err) {
				t.Fatalf("Pull = %v, want unauthorized", err)
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	assertEmpty(t, s)
	img, _, err := pullLines(t, s, ref, PullOptions{Auth: mobyregistry.AuthConfig{Username: "hutch", Password: "s3cret", ServerAddress: reg.host}})
	if err != nil {
		t.Fatalf("pull with credentials: %v", err)
	}
	if !slices.Equal(img.RepoTags, []string{ref}) {
		t.Errorf("RepoTags = %v", img.RepoTags)
	}
}

func TestLogin(t *testing.T) {
	reg := newRegistry(t, "hutch", "s3cret")
	s := newStore(t, "")
	if err := s.Login(context.Background(), mobyregistry.AuthConfig{Username: "hutch", Password: "s3cret", ServerAddress: reg.host}, PullOptions{}); err != nil {
		t.Errorf("good credentials: %v", err)
	}
	err := s.Login(context.Background(), mobyregistry.AuthConfig{Username: "hutch", Password: "wrong", ServerAddress: "http://" + reg.host}, PullOptions{})
	if !errdefs.IsUnauthorized(err) || !errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("bad credentials: %v", err)
	}
}

// TestPullFailureLeavesNothing fails the last layer blob of a multi-layer
// image after the first layers were committed: no image and no layer may
// remain, whoever copied the layers.
func TestPullFailureLeavesNothing(t *testing.T) {
	t.Run("fetcher", func(t *testing.T) { testPullFailureLeavesNothing(t, false) })
	t.Run("containers-image", func(t *testing.T) { testPullFailureLeavesNothing(t, true) })
}

func testPullFailureLeavesNothing(t *testing.T, noFetcher bool) {
	reg := newRegistry(t, "", "")
	multi, err := testimage.MultiLayer(3)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "multi:latest", multi)
	_, _, layers := digests(t, multi)
	reg.failBlob(layers[len(layers)-1])
	s := newStore(t, "")
	s.noFetcher = noFetcher
	_, lines, err := pullLines(t, s, ref, PullOptions{MaxConcurrentDownloads: 1})
	if err == nil {
		t.Fatalf("pull succeeded despite a missing blob:\n%s", strings.Join(lines, "\n"))
	}
	if !slices.Contains(lines, strings.TrimPrefix(layers[0], "sha256:")[:12]+": Pull complete") {
		t.Errorf("the first layer was not committed before the failure, the test proves nothing:\n%s", strings.Join(lines, "\n"))
	}
	assertEmpty(t, s)
}

func assertEmpty(t *testing.T, s *Store) {
	t.Helper()
	imgs, err := s.Images()
	if err != nil || len(imgs) != 0 {
		t.Errorf("images left: %v, %v", imgs, err)
	}
	ls, err := s.Backend().Layers()
	if err != nil || len(ls) != 0 {
		t.Errorf("layers left: %d, %v", len(ls), err)
	}
}

func TestPullConcurrent(t *testing.T) {
	reg := newRegistry(t, "", "")
	multi, err := testimage.MultiLayer(3)
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{reg.push(t, "multi:a", multi), reg.push(t, "multi:b", multi)}
	_, configDigest, _ := digests(t, multi)
	s := newStore(t, "")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			img, err := s.Pull(context.Background(), refs[i%2], PullOptions{}, nil)
			if err == nil && img.ID != idByConfig(t, s, configDigest) {
				err = fmt.Errorf("pulled %s, want the manifest of config %s", img.ID, configDigest)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	imgs, err := s.Images()
	if err != nil || len(imgs) != 1 || len(imgs[0].RepoTags) != 2 {
		t.Errorf("images after concurrent pulls: %+v, %v", imgs, err)
	}
	checkRootfsFile(t, s, imgs[0].ID, "data/layer2.txt")
}

func checkRootfsFile(t *testing.T, s *Store, id, file string) {
	t.Helper()
	hexID := storedHex(t, s, id)
	root, err := s.Backend().MountImage(hexID, []string{"ro"}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Backend().UnmountImage(hexID, true)
	if _, err := os.Stat(filepath.Join(root, file)); err != nil {
		t.Error(err)
	}
}

func TestImageLookupAndRemove(t *testing.T) {
	reg := newRegistry(t, "", "")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.push(t, "busybox:latest", busybox)
	manifestDigest, configDigest, _ := digests(t, busybox)
	s := newStore(t, "")
	if _, err := s.Pull(context.Background(), ref, PullOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	id := idByConfig(t, s, configDigest)
	hexID := strings.TrimPrefix(id, "sha256:")
	// The config's digest still finds the image: containers made when IDs
	// were config digests name it so.
	for _, q := range []string{id, hexID, hexID[:12], configDigest, ref, reg.host + "/busybox", reg.host + "/busybox@" + manifestDigest} {
		t.Run(q, func(t *testing.T) {
			img, err := s.Image(q)
			if err != nil || img.ID != id {
				t.Errorf("Image(%q) = %+v, %v", q, img, err)
			}
		})
	}
	for _, q := range []string{"busybox", reg.host + "/busybox:nope", "sha256:" + strings.Repeat("0", 64), "0000"} {
		t.Run("missing "+q, func(t *testing.T) {
			if _, err := s.Image(q); !errdefs.IsNotFound(err) || err.Error() != "No such image: "+q {
				t.Errorf("Image(%q) error = %v", q, err)
			}
		})
	}
	cfg, err := s.ImageConfig(ref)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"sh"}) || len(cfg.RootFS.DiffIDs) != 1 {
		t.Errorf("config = %+v", cfg)
	}
	deleted, err := s.DeleteImage(context.Background(), "sha256:"+hexID)
	if err != nil || len(deleted) != 1 {
		t.Errorf("DeleteImage = %v, %v", deleted, err)
	}
	if _, err := s.DeleteImage(context.Background(), hexID); !errdefs.IsNotFound(err) {
		t.Errorf("second DeleteImage = %v", err)
	}
	assertEmpty(t, s)
}
