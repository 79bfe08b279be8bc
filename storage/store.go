package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/errdefs"
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/types"
)

// Driver names reported by Store.Driver and accepted in Options.Driver.
const (
	DriverOverlay = "overlay"        // native kernel overlayfs (in a user namespace: kernel >= 5.11, userxattr)
	DriverFuse    = "fuse-overlayfs" // c/storage's overlay driver with fuse-overlayfs as mount program
	DriverVFS     = "vfs"            // full copies; works everywhere, slow and big
)

// Options configures Open. Paths are required: the library's defaults are
// wrong inside a user namespace, where the daemon is uid 0.
type Options struct {
	// GraphRoot holds layers and images (e.g. $XDG_DATA_HOME/hutch/storage).
	GraphRoot string
	// RunRoot holds state lost on reboot: mount counts, feature-probe caches
	// (e.g. $XDG_RUNTIME_DIR/hutch/storage).
	RunRoot string
	// Driver forces a driver (DriverOverlay, DriverFuse, DriverVFS); "" probes.
	Driver string
	// SingleUID says only one uid is mapped (no subuid range): chown errors
	// while extracting layers are ignored and files end up owned by that uid.
	SingleUID bool
	// Logger receives the probe results; nil discards.
	Logger *slog.Logger
	// InsecureRegistries and Mirrors are daemon.json's insecure-registries
	// and registry-mirrors, used by PullImage.
	InsecureRegistries []string
	Mirrors            []string
}

// Store is hutch's image and layer store. Its methods are safe for
// concurrent use.
type Store struct {
	cs        cstorage.Store
	opts      Options
	driver    driverChoice
	status    [][2]string
	log       *slog.Logger
	tmpDir    string // big temporary files of pulls (same file system as the layers)
	regDir    string // generated registries.conf files
	authEmpty string // an auth file that does not exist: never read the user's docker config

	// proxy, when set (tests), chooses the proxy of every registry request;
	// returning an error keeps a request from leaving the machine.
	proxy func(*url.URL) (*url.URL, error)
	// noFetcher (tests) leaves layer copying to containers/image, the path
	// taken for images the fetcher does not handle.
	noFetcher bool

	pulls      pullTracker
	metaMu     sync.Mutex // serialises updates of image metadata (imagemeta.go)
	layerLocks keyedLocks // one creation of a layer ID at a time (fetchstage.go)
	mounts     rootfsMounts
	ids        sync.Map // image ID hex → the store's image ID (byFullID)
	manifests  sync.Map // the store's image ID → imageManifest (imageid.go)
	initFailed sync.Map // image top layers whose init layer could not be made
	stageOnce  sync.Once
	stageOK    bool // layers can be streamed into staging directories (canStage)
}

// Open opens (creating if needed) the store at opts.GraphRoot/RunRoot.
// It returns errdefs.ErrInvalidArgument for missing paths or an unknown
// driver, and an error naming the driver when none works.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.GraphRoot == "" || opts.RunRoot == "" {
		return nil, fmt.Errorf("storage: GraphRoot and RunRoot must be set: %w", errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(opts.GraphRoot) || !filepath.IsAbs(opts.RunRoot) {
		return nil, fmt.Errorf("storage: GraphRoot %q and RunRoot %q must be absolute: %w", opts.GraphRoot, opts.RunRoot, errdefs.ErrInvalidArgument)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, dir := range []string{opts.GraphRoot, opts.RunRoot} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("storage: %w", err)
		}
	}

	if err := pruneStaging(opts.GraphRoot); err != nil {
		log.Warn("storage: cannot remove staged layers of an earlier run", "err", err)
	}
	cs, choice, err := openDriver(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cs:        cs,
		opts:      opts,
		driver:    choice,
		log:       log,
		tmpDir:    filepath.Join(opts.GraphRoot, "tmp"),
		regDir:    filepath.Join(opts.RunRoot, "registries"),
		authEmpty: filepath.Join(opts.RunRoot, "no-auth.json"),
	}
	s.pulls.init()
	if p := igzipPath(); p != "" {
		log.Debug("storage: gzip layers decompress with igzip", "path", p)
	} else {
		log.Debug("storage: igzip not found or turned off (HUTCH_IGZIP=0): gzip layers decompress in Go")
	}
	// Temporary blobs of pulls interrupted by a crash are garbage.
	if err := os.RemoveAll(s.tmpDir); err != nil {
		log.Warn("storage: cannot clean temporary directory", "dir", s.tmpDir, "err", err)
	}
	for _, dir := range []string{s.tmpDir, s.regDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			_, _ = cs.Shutdown(true)
			return nil, fmt.Errorf("storage: %w", err)
		}
	}
	if n, err := resetStaleMounts(cs); err != nil {
		log.Warn("storage: cannot forget the mounts of a daemon that was killed", "reset", n, "err", err)
	}
	// Layers of operations a crash interrupted.
	if n, err := sweepOrphanLayers(cs); err != nil {
		log.Warn("storage: cannot remove the layers of interrupted operations", "removed", n, "err", err)
	} else if n > 0 {
		log.Info("storage: removed the layers of interrupted operations", "count", n)
	}
	if err := s.sweepInitLayers(); err != nil {
		log.Warn("storage: cannot remove init layers of deleted images", "err", err)
	}
	raw, err := cs.Status()
	if err != nil {
		log.Warn("storage: driver status", "err", err)
	}
	s.status = dockerDriverStatus(choice, raw)
	log.Info("storage: opened", "driver", choice.name, "graphroot", opts.GraphRoot, "runroot", opts.RunRoot, "single_uid", opts.SingleUID)
	return s, nil
}

// storeOptions builds the library options explicitly; nothing comes from
// storage.conf or the environment.
func storeOptions(opts Options, choice driverChoice) types.StoreOptions {
	return types.StoreOptions{
		GraphRoot:          opts.GraphRoot,
		RunRoot:            opts.RunRoot,
		GraphDriverName:    choice.storageDriver(),
		GraphDriverOptions: choice.driverOptions(opts.SingleUID),
		// Partial (zstd:chunked) pulls would make image IDs depend on TOC
		// digests instead of the config digest that Docker reports.
		PullOptions: map[string]string{
			"enable_partial_images": "false",
			"use_hard_links":        "false",
			"convert_images":        "false",
		},
	}
}

// Driver returns the driver in use: DriverOverlay, DriverFuse or DriverVFS.
func (s *Store) Driver() string { return s.driver.name }

// DriverStatus returns the driver's key/value pairs in the shape of Docker's
// /info DriverStatus.
func (s *Store) DriverStatus() [][2]string {
	out := make([][2]string, len(s.status))
	copy(out, s.status)
	return out
}

// Backend returns the underlying go.podman.io/storage store, for the engine's
// container layers and mounts.
func (s *Store) Backend() cstorage.Store { return s.cs }

// GraphRoot returns the directory holding layers and images.
func (s *Store) GraphRoot() string { return s.opts.GraphRoot }

// Close unmounts every layer this store mounted and releases the driver.
// Callers stop containers first: mounts still in use are forced away.
func (s *Store) Close() error {
	mounted, err := s.cs.Shutdown(true)
	if len(mounted) > 0 {
		s.log.Warn("storage: layers were still mounted at shutdown", "layers", mounted)
	}
	if err != nil && !errors.Is(err, cstorage.ErrLayerUsedByContainer) {
		return fmt.Errorf("storage: shutdown: %w", err)
	}
	return nil
}

// pullTracker counts running pulls so that layers left by failed pulls are
// removed only when no other pull could be about to use them.
type pullTracker struct {
	mu      sync.Mutex
	active  int
	orphans []string // layer IDs created by failed pulls, oldest first
	refs    map[string]*refLock
}

type refLock struct {
	held    chan struct{} // capacity 1: full while a pull of the reference runs
	waiters int           // guarded by pullTracker.mu
}

func (t *pullTracker) init() { t.refs = map[string]*refLock{} }
