// Package engine owns hutch's domain: container records and their state
// machine, the image service, and the facts the daemon reports about itself.
// The API server calls it through small interfaces; it knows nothing of HTTP.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/events"
	"github.com/hutch-engine/hutch/engine/images"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/networking"
	"github.com/hutch-engine/hutch/engine/rootfs"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/volume"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// Options wires an Engine. The daemon fills it; the engine does not look at
// the environment to find out where or how it runs.
type Options struct {
	// DataRoot holds persistent state (containers, storage, engine id).
	DataRoot string
	// Rootless is true inside a user namespace.
	Rootless bool
	// IDMap describes the user namespace mapping ("full", "single" or "none").
	IDMap string
	// Warnings are shown in /info (e.g. single-UID mode, cgroup v1).
	Warnings []string
	// LiveRestore leaves the containers running when the engine closes:
	// the namespaces they live in outlive it (docs/containers.md, Crash
	// recovery), and the next engine adopts them.
	LiveRestore bool
	// APIVersion and MinAPIVersion are the range the API server serves.
	APIVersion, MinAPIVersion string
	Logger                    *slog.Logger

	// StateDir holds runtime state: bundles, shim sockets, libcontainer's
	// state root. It must not contain RuntimeBinary's directory.
	StateDir string
	// ShimBinary is the hutch-shim executable.
	ShimBinary string
	// RuntimeBinary is hutch-runtime, the shim's libcontainer side.
	RuntimeBinary string
	// InitBinary is the static init --init runs as /sbin/docker-init.
	InitBinary string
	// NetNS is the detached network namespace containers join by default
	// ("" when the daemon runs without networking).
	NetNS string
	// Networks gives containers their network (nil: they join NetNS).
	Networks networking.Service
	// Images is the image and layer store (nil: no containers can be made).
	Images imagestore.Store
	// Debug makes shims log at debug level.
	Debug bool
	// LogConfig is the log driver and options of containers that name
	// none (daemon.json's log-driver and log-opts; json-file when empty).
	LogConfig containertypes.LogConfig
	// DNS is what a container that gives none of its own servers, search
	// domains or options gets, each apart (daemon.json's dns, dns-search
	// and dns-opts).
	DNS DNSConfig
	// LegacyLinkEnv sets the environment variables of legacy links in the
	// linking container, as Docker 29 does only when its daemon runs with
	// DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS=1.
	LegacyLinkEnv bool
	// SeccompProfile is daemon.json's seccomp-profile: the default filter
	// of containers that ask for none ("" or "builtin": Docker's default
	// profile; "unconfined": none; else the path of a profile).
	SeccompProfile string
}

// Engine is the daemon's domain service.
type Engine struct {
	// Service serves the image endpoints (package images).
	*images.Service
	opts       Options
	id         string
	log        *slog.Logger
	images     imagestore.Store
	containers *container.Store
	volumes    *volume.Store
	events     *events.Log
	// shims makes and finds the containers' shims (realShims).
	shims shimHost
	// rtServer is the runtime server the shims ask (nil without a
	// runtime binary: tests of the engine alone).
	rtServer *shim.RuntimeServer
	// volMu orders what makes, mounts and removes volumes: a volume is
	// not removed between its making and the record of the container
	// that mounts it.
	volMu sync.Mutex
	runs  *runs
	joins netnsJoins
	// restarts applies restart policies (restart.go); closing is set when
	// the daemon's shutdown begins: exits are then not restarted.
	restarts *restarts
	closing  atomic.Bool
	// dnsMu orders network connects and disconnects, each with the
	// rewrite of resolv.conf it may need (netdns.go).
	dnsMu  sync.Mutex
	rootfs *rootfs.Pool
	host   shim.Host
	execs  execStore
	starts *startGate
	health healthMonitors
	// monitors counts the monitor goroutines, so that Close returns only
	// after every ended run is cleaned up (rootfs, network).
	monitors sync.WaitGroup
	seccomp  seccompDefault
}

// New opens the engine's state under opts.DataRoot.
func New(ctx context.Context, opts Options) (*Engine, error) {
	return newEngine(ctx, opts, realShims{})
}

// newEngine is New with the shims of shims: a fake in unit tests.
func newEngine(ctx context.Context, opts Options, shims shimHost) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := checkDefaultLogConfig(opts.LogConfig); err != nil {
		return nil, err
	}
	seccomp, err := loadSeccompDefault(opts.SeccompProfile)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataRoot, 0o700); err != nil {
		return nil, fmt.Errorf("data root: %w", err)
	}
	id, err := loadOrCreateID(filepath.Join(opts.DataRoot, "engine-id"))
	if err != nil {
		return nil, err
	}
	store, err := container.NewStore(filepath.Join(opts.DataRoot, "containers"), container.WithLogger(opts.Logger))
	if err != nil {
		return nil, err
	}
	for _, le := range store.Skipped() {
		opts.Logger.Warn("skipped a damaged container record", "dir", le.Dir, "err", le.Err)
	}
	volumes, err := volume.Open(filepath.Join(opts.DataRoot, "volumes"))
	if err != nil {
		return nil, fmt.Errorf("volume store: %w", err)
	}
	e := &Engine{opts: opts, id: id, log: opts.Logger, images: opts.Images, containers: store, volumes: volumes, events: events.New(), runs: newRuns(), restarts: newRestarts(), host: shim.DetectHost(), shims: shims, seccomp: seccomp}
	e.rootfs = rootfs.New(opts.Images, e.log)
	e.Service = images.New(images.Options{Store: opts.Images, Containers: store, Events: e.events, Quiesce: e.rootfs.Quiesce, Log: e.log})
	e.starts = newStartGate(runtime.NumCPU(), startLease)
	// Contexts of builds a crash interrupted.
	if err := os.RemoveAll(e.buildDir()); err != nil {
		e.log.Warn("removing old build contexts", "err", err)
	}
	if opts.RuntimeBinary != "" {
		e.rtServer = shim.NewRuntimeServer(opts.RuntimeBinary, filepath.Join(opts.StateDir, "runtime.sock"), filepath.Join(opts.StateDir, "runtime.log"), opts.Debug, e.log)
	}
	if err := e.reconcile(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Close stops every running container (their stop signal, then SIGKILL
// after their timeout) and waits until each exit is recorded. With live
// restore it leaves them running for the next engine to adopt: their
// shims record the exits that come meanwhile.
func (e *Engine) Close() error {
	e.closing.Store(true)
	e.restarts.cancelAll()
	shim.CloseWarm()
	e.stopAllHealth()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if e.opts.LiveRestore {
		e.runs.mu.Lock()
		n := len(e.runs.shims)
		e.runs.mu.Unlock()
		if n > 0 {
			e.log.Info("live restore: leaving the running containers running", "count", n)
		}
		return e.closeRest()
	}
	e.runs.mu.Lock()
	ids := make([]string, 0, len(e.runs.shims))
	for id := range e.runs.shims {
		ids = append(ids, id)
	}
	e.runs.mu.Unlock()
	if len(ids) > 0 {
		// Each gets its stop signal and timeout, as from docker stop: a
		// shutdown can take that long.
		e.log.Info("stopping running containers", "count", len(ids))
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := e.containers.Get(ctx, id)
			if err != nil {
				return
			}
			if err := e.stop(ctx, c, StopRequest{}); err != nil && !errors.Is(err, errdefs.ErrNotModified) {
				e.log.Warn("stopping at shutdown", "container", id, "err", err)
			}
		}()
	}
	wg.Wait()
	// The runs that ended are cleaned up (rootfs unmounted, network
	// released) before the daemon closes what that needs.
	done := make(chan struct{})
	go func() { e.monitors.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.log.Warn("containers still being cleaned up at shutdown")
	}
	return e.closeRest()
}

// LoadID returns the ID of the engine whose data is under dataRoot,
// made at its first start: the daemon reads it before the engine opens,
// for what derives from it (the networks' IPv6 pool, as Docker derives
// it from its engine ID).
func LoadID(dataRoot string) (string, error) {
	if err := os.MkdirAll(dataRoot, 0o700); err != nil {
		return "", fmt.Errorf("data root: %w", err)
	}
	return loadOrCreateID(filepath.Join(dataRoot, "engine-id"))
}

// loadOrCreateID keeps a stable engine ID across restarts, as Docker does.
func loadOrCreateID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	h := hex.EncodeToString(raw[:])
	id := fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
	if err := atomicfile.Write(path, []byte(id+"\n"), 0o600, true); err != nil {
		return "", err
	}
	return id, nil
}
