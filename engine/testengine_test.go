package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// testImage is the image the test engines' containers are made from.
const testImage = "docker.io/library/busybox:latest"

// testEngine is an Engine over fakes: images in memory with writable
// layers as plain directories (dirStore), and shims that are values of
// the test (fakeShims), so that the container lifecycle and the crash
// recovery run without a runtime, a user namespace or a network.
type testEngine struct {
	*Engine
	dirs  testDirs
	shims *fakeShims
	store *dirStore
}

type testDirs struct{ data, state string }

// newTestEngine opens an engine on fresh directories.
func newTestEngine(t *testing.T) *testEngine {
	t.Helper()
	dirs := testDirs{data: t.TempDir(), state: t.TempDir()}
	img := imagestoretest.Image(1, testImage)
	img.Config = &dockerspec.DockerOCIImage{
		Image:  ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}},
		Config: dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}}},
	}
	store := &dirStore{Fake: imagestoretest.New(img), root: t.TempDir()}
	return reopenTestEngine(t, dirs, store, newFakeShims())
}

// reopenTestEngine opens an engine on the directories of a previous one,
// as a daemon's restart does, with the shims that outlived it.
func reopenTestEngine(t *testing.T, dirs testDirs, store *dirStore, shims *fakeShims) *testEngine {
	t.Helper()
	e, err := newEngine(context.Background(), Options{
		DataRoot: dirs.data,
		StateDir: dirs.state,
		Images:   store,
		Logger:   slog.New(slog.DiscardHandler),
	}, shims)
	if err != nil {
		t.Fatal(err)
	}
	return &testEngine{Engine: e, dirs: dirs, shims: shims, store: store}
}

// dirStore gives the fake image store writable layers: a directory each.
type dirStore struct {
	*imagestoretest.Fake
	root string
	mu   sync.Mutex
	n    int
}

var _ imagestore.Store = (*dirStore)(nil)

func (s *dirStore) CreateRootfs(_ context.Context, _, _ string, _ bool) (string, error) {
	s.mu.Lock()
	s.n++
	id := fmt.Sprintf("rootfs%d", s.n)
	s.mu.Unlock()
	return id, os.MkdirAll(filepath.Join(s.root, id), 0o755)
}

func (s *dirStore) MountRootfs(_ context.Context, id string) (string, error) {
	p := filepath.Join(s.root, id)
	if _, err := os.Stat(p); err != nil {
		return "", errdefs.ErrNotFound.WithMessage("no rootfs " + id)
	}
	return p, nil
}

func (s *dirStore) UnmountRootfs(context.Context, string) error { return nil }
func (s *dirStore) RemoveRootfs(_ context.Context, id string) error {
	return os.RemoveAll(filepath.Join(s.root, id))
}
func (s *dirStore) RootfsSize(context.Context, string) (int64, error) { return 0, nil }
func (s *dirStore) RootfsDriverData(context.Context, string) (map[string]string, error) {
	return map[string]string{}, nil
}

func (s *dirStore) Rootfses(context.Context) ([]string, error) {
	ents, err := os.ReadDir(s.root)
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids, err
}

// fakeShims is the shims of a test: created by the engine's starts,
// found again by socket after a restart while they "run".
type fakeShims struct {
	*shimSet
	// dead ends this engine's view of the shims (kill): its connections
	// then never answer again, as a killed daemon records nothing.
	dead chan struct{}
}

// shimSet is the shims that run, which outlive the engines.
type shimSet struct {
	mu       sync.Mutex
	bySocket map[string]*fakeShim
	pids     int
}

func newFakeShims() *fakeShims {
	return &fakeShims{shimSet: &shimSet{bySocket: map[string]*fakeShim{}, pids: 1000}, dead: make(chan struct{})}
}

// kill is the engine's death: the shims run on, and restart gives the
// next engine its view of them.
func (f *fakeShims) kill() { close(f.dead) }

func (f *fakeShims) restart() *fakeShims {
	return &fakeShims{shimSet: f.shimSet, dead: make(chan struct{})}
}

func (f *fakeShims) Create(_ context.Context, opts shim.StartOptions) (shimConn, error) {
	if _, err := os.Stat(filepath.Join(opts.BundleDir, wire.SpecFile)); err != nil {
		return nil, fmt.Errorf("no spec in the bundle: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids++
	s := &fakeShim{pid: f.pids, exitFile: opts.ExitFile, exited: make(chan struct{})}
	f.bySocket[opts.SocketPath] = s
	return &fakeConn{fakeShim: s, dead: f.dead}, nil
}

func (f *fakeShims) Connect(_ context.Context, socket string) (shimConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.bySocket[socket]
	if s == nil || s.gone {
		return nil, fmt.Errorf("%s: %w", socket, shim.ErrNoShim)
	}
	return &fakeConn{fakeShim: s, dead: f.dead}, nil
}

func (f *fakeShims) Delete(context.Context, string, string) error { return nil }

// only returns the one shim made so far.
func (f *fakeShims) only(t *testing.T) *fakeShim {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bySocket) != 1 {
		t.Fatalf("%d shims, want 1", len(f.bySocket))
	}
	for _, s := range f.bySocket {
		return s
	}
	return nil
}

// fakeShim is a container's shim: started, then running until exit (its
// process ends, with the code it is given) or a kill.
type fakeShim struct {
	mu       sync.Mutex
	pid      int
	exitFile string
	started  bool
	status   wire.ExitStatus
	exited   chan struct{}
	// gone: the shim died with its daemon (Connect no longer finds it).
	gone bool
}

// exit ends the container's process with code, recorded in the exit
// file as the shim does.
func (s *fakeShim) exit(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return
	default:
	}
	s.status = wire.ExitStatus{ExitCode: code, FinishedAt: time.Now().UTC()}
	if s.exitFile != "" {
		if err := wire.WriteExit(s.exitFile, s.status); err != nil {
			panic(err)
		}
	}
	close(s.exited)
}

func (s *fakeShim) Pid() int { return s.pid }

func (s *fakeShim) State(context.Context) (wire.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return wire.State{Status: wire.StatusStopped, Pid: s.pid}, nil
	default:
	}
	if !s.started {
		return wire.State{Status: wire.StatusCreated, Pid: s.pid}, nil
	}
	return wire.State{Status: wire.StatusRunning, Pid: s.pid}, nil
}

func (s *fakeShim) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	return nil
}

func (s *fakeShim) Kill(_ context.Context, sig syscall.Signal) error {
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		s.exit(128 + int(sig))
	}
	return nil
}

// fakeConn is one engine's connection to a shim.
type fakeConn struct {
	*fakeShim
	dead chan struct{}
}

func (c *fakeConn) Wait(ctx context.Context) (wire.ExitStatus, error) {
	select {
	case <-c.exited:
	case <-ctx.Done():
		return wire.ExitStatus{}, ctx.Err()
	case <-c.dead:
		<-ctx.Done()
		return wire.ExitStatus{}, ctx.Err()
	}
	select {
	case <-c.dead:
		<-ctx.Done()
		return wire.ExitStatus{}, ctx.Err()
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, nil
}

var errFakeShim = errdefs.ErrNotImplemented.WithMessage("not in the fake shim")

func (s *fakeShim) Pause(context.Context) error                  { return errFakeShim }
func (s *fakeShim) Resume(context.Context) error                 { return errFakeShim }
func (s *fakeShim) Resize(context.Context, uint16, uint16) error { return errFakeShim }
func (s *fakeShim) ResizeExec(context.Context, string, uint16, uint16) error {
	return errFakeShim
}
func (s *fakeShim) Attach(context.Context, shim.AttachOptions) (*shim.Attachment, error) {
	return nil, errFakeShim
}
func (s *fakeShim) Exec(context.Context, shim.ExecOptions) (wire.ExitStatus, error) {
	return wire.ExitStatus{}, errFakeShim
}
func (s *fakeShim) WaitExec(context.Context, string) (wire.ExecState, error) {
	return wire.ExecState{}, errFakeShim
}
func (s *fakeShim) ExecState(context.Context, string) (wire.ExecState, error) {
	return wire.ExecState{}, errFakeShim
}
