package buildkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/v2/core/diff/apply"
	ctdmetadata "github.com/containerd/containerd/v2/core/metadata"
	ctdsnapshot "github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/containerd/containerd/v2/plugins/diff/walking"
	"github.com/containerd/containerd/v2/plugins/snapshots/native"
	"github.com/containerd/containerd/v2/plugins/snapshots/overlay"
	"github.com/containerd/containerd/v2/plugins/snapshots/overlay/overlayutils"
	fuseoverlayfs "github.com/containerd/fuse-overlayfs-snapshotter/v2"
	"github.com/containerd/platforms"
	"github.com/moby/buildkit/cache/metadata"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/executor/oci"
	bkexporter "github.com/moby/buildkit/exporter"
	"github.com/moby/buildkit/session"
	containerdsnapshot "github.com/moby/buildkit/snapshot/containerd"
	"github.com/moby/buildkit/util/leaseutil"
	"github.com/moby/buildkit/util/winlayers"
	"github.com/moby/buildkit/worker/base"
	wlabel "github.com/moby/buildkit/worker/label"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// gcKeep is what the worker's garbage collection keeps of the build cache
// by default, as Docker's builder does (its defaultGCPolicy keeps 10% of
// the disk, at most 20 GB; here a fixed figure of the same order).
const gcKeep = 10 << 30

// newWorker assembles the worker: content store and metadata in bolt,
// the snapshotter, hutch's executor and the engine's images.
func newWorker(ctx context.Context, cfg Config, eng *engineClient) (*worker, error) {
	root := filepath.Join(cfg.Root, "worker")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	start := time.Now()
	snName, snNew := snapshotterFor(root)
	cfg.Log.Debug("snapshotter chosen", "name", snName, "after", time.Since(start))
	sn, err := snNew(filepath.Join(root, "snapshots"))
	if err != nil {
		return nil, fmt.Errorf("%s snapshotter: %w", snName, err)
	}
	store, err := local.NewStore(filepath.Join(root, "content"))
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(root, "containerdmeta.db"), 0o600, &bolt.Options{
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, err
	}
	mdb := ctdmetadata.NewDB(db, store, map[string]ctdsnapshot.Snapshotter{snName: sn})
	if err := mdb.Init(ctx); err != nil {
		return nil, err
	}
	cs := containerdsnapshot.NewContentStore(mdb.ContentStore(), "buildkit")
	id, err := base.ID(root)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewStore(filepath.Join(root, "metadata_v2.db"))
	if err != nil {
		return nil, err
	}
	exe, err := newExecutor(cfg, filepath.Join(root, "executor"))
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	opt := base.WorkerOpt{
		ID:   id,
		Root: root,
		Labels: map[string]string{
			wlabel.Executor: "hutch-runtime",
			// buildx's docker driver reads this label as "the daemon's
			// builder has an image store of its own" and then offers the
			// oci and docker exporters, cache export and direct push.
			wlabel.Snapshotter:    snName,
			wlabel.Hostname:       hostname,
			wlabel.Network:        "host",
			wlabel.OCIProcessMode: oci.ProcessSandbox.String(),
		},
		MetadataStore:   md,
		ContentMetadata: db,
		// The executor's, which the worker closes.
		NetworkProviders: exe.networks,
		Executor:         exe,
		Snapshotter:      containerdsnapshot.NewSnapshotter(snName, mdb.Snapshotter(snName), "buildkit", nil),
		ContentStore:     cs,
		Applier:          winlayers.NewFileSystemApplierWithWindows(cs, apply.NewFileSystemApplier(cs)),
		Differ:           winlayers.NewWalkingDiffWithWindows(cs, walking.NewWalkingDiff(cs)),
		ImageStore:       &localImages{eng: eng, cs: cs},
		RegistryHosts:    cfg.RegistryHosts,
		Platforms:        []ocispecs.Platform{platforms.Normalize(platforms.DefaultSpec())},
		LeaseManager:     leaseutil.WithNamespace(ctdmetadata.NewLeaseManager(mdb), "buildkit"),
		GarbageCollect:   mdb.GarbageCollect,
		MountPoolRoot:    filepath.Join(root, "cachemounts"),
		GCPolicy:         []client.PruneInfo{{All: true, KeepDuration: 0, MaxUsedSpace: gcKeep}},
	}
	cfg.Log.Debug("stores open", "after", time.Since(start))
	w, err := base.NewWorker(ctx, opt)
	if err != nil {
		return nil, err
	}
	cfg.Log.Debug("worker ready", "after", time.Since(start))
	return &worker{Worker: w, eng: eng, exec: exe}, nil
}

// snapshotterFor picks what the engine's storage would: native overlay
// where the kernel mounts it here (in a user namespace: Linux 5.11 and
// later), else fuse-overlayfs where it is installed and /dev/fuse opens,
// else copies.
func snapshotterFor(root string) (string, func(string) (ctdsnapshot.Snapshotter, error)) {
	if err := overlayutils.Supported(root); err == nil {
		return "overlayfs", func(dir string) (ctdsnapshot.Snapshotter, error) {
			return overlay.NewSnapshotter(dir, overlay.AsynchronousRemove)
		}
	}
	if err := fuseoverlayfs.Supported(root); err == nil {
		return "fuse-overlayfs", func(dir string) (ctdsnapshot.Snapshotter, error) {
			return fuseoverlayfs.NewSnapshotter(dir)
		}
	}
	return "native", native.NewSnapshotter
}

// worker is BuildKit's base worker with the engine's exporter added.
type worker struct {
	*base.Worker
	eng  *engineClient
	exec *runExecutor
}

// Exporter returns BuildKit's exporters, and "moby", which loads the
// image into the engine.
func (w *worker) Exporter(name string, sm *session.Manager) (bkexporter.Exporter, error) {
	if name == mobyExporter {
		inner, err := w.Worker.Exporter(client.ExporterImage, sm)
		if err != nil {
			return nil, err
		}
		return &exporter{inner: inner, eng: w.eng, cs: w.ContentStore()}, nil
	}
	return w.Worker.Exporter(name, sm)
}
