package buildkit

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/moby/buildkit/cache/remotecache"
	inlineremotecache "github.com/moby/buildkit/cache/remotecache/inline"
	localremotecache "github.com/moby/buildkit/cache/remotecache/local"
	registryremotecache "github.com/moby/buildkit/cache/remotecache/registry"
	"github.com/moby/buildkit/control"
	"github.com/moby/buildkit/frontend"
	dockerfile "github.com/moby/buildkit/frontend/dockerfile/builder"
	"github.com/moby/buildkit/frontend/gateway"
	"github.com/moby/buildkit/frontend/gateway/forwarder"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/solver"
	"github.com/moby/buildkit/solver/bboltcachestorage"
	"github.com/moby/buildkit/util/entitlements"
	bkworker "github.com/moby/buildkit/worker"
	bolt "go.etcd.io/bbolt"
)

// newController assembles BuildKit's control API on one worker, with the
// frontends and cache back-ends Docker's daemon offers.
func newController(ctx context.Context, cfg Config, sm *session.Manager, eng *engineClient, tr *tracer) (*control.Controller, *worker, error) {
	w, err := newWorker(ctx, cfg, eng)
	if err != nil {
		return nil, nil, fmt.Errorf("buildkit worker: %w", err)
	}
	wc := &bkworker.Controller{}
	if err := wc.Add(w); err != nil {
		return nil, nil, err
	}
	gwf, err := gateway.NewGatewayFrontend(wc.Infos(), nil)
	if err != nil {
		return nil, nil, err
	}
	frontends := map[string]frontend.Frontend{
		"dockerfile.v0": forwarder.NewGatewayForwarder(wc.Infos(), dockerfile.Build),
		"gateway.v0":    gwf,
	}
	cacheStorage, err := bboltcachestorage.NewStore(filepath.Join(cfg.Root, "cache.db"))
	if err != nil {
		return nil, nil, err
	}
	historyDB, err := bolt.Open(filepath.Join(cfg.Root, "history.db"), 0o600, &bolt.Options{
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, nil, err
	}
	c, err := control.NewController(control.Opt{
		SessionManager:   sm,
		WorkerController: wc,
		Frontends:        frontends,
		CacheManager:     solver.NewCacheManager(ctx, "local", cacheStorage, bkworker.NewCacheResultStorage(wc)),
		CacheStore:       cacheStorage,
		ResolveCacheImporterFuncs: map[string]remotecache.ResolveCacheImporterFunc{
			"registry": registryremotecache.ResolveCacheImporterFunc(sm, w.ContentStore(), cfg.RegistryHosts),
			"local":    localremotecache.ResolveCacheImporterFunc(sm),
		},
		ResolveCacheExporterFuncs: map[string]remotecache.ResolveCacheExporterFunc{
			"registry": registryremotecache.ResolveCacheExporterFunc(sm, cfg.RegistryHosts),
			"local":    localremotecache.ResolveCacheExporterFunc(sm),
			"inline":   inlineremotecache.ResolveCacheExporterFunc(),
		},
		// As Docker's daemon: --network host and devices are allowed,
		// --allow security.insecure is not.
		Entitlements:   []string{string(entitlements.EntitlementNetworkHost)},
		HistoryDB:      historyDB,
		TraceCollector: tr.collector(),
		LeaseManager:   w.LeaseManager(),
		ContentStore:   w.ContentStore(),
		GarbageCollect: w.GarbageCollect,
	})
	if err != nil {
		return nil, nil, err
	}
	return c, w, nil
}
