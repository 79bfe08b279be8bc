package engine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// Crash recovery: what an engine does at its start with the records, the
// shims, the runtime's state and the networks a previous engine left,
// whether it exited, was killed or left its containers running (live
// restore). The shutdown that leaves them is Close (engine.go).

// reconcile makes every record true after a crash: a container whose shim
// still runs is adopted again; one whose shim is gone gets the exit the
// shim recorded, or is marked lost.
func (e *Engine) reconcile(ctx context.Context) error {
	adopt := map[string]shimConn{}
	probe := func(ctx context.Context, c *container.Container) (bool, *container.ExitInfo) {
		if c.Runtime.ShimSocket != "" {
			if client, err := e.shims.Connect(ctx, c.Runtime.ShimSocket); err == nil {
				if st, err := client.State(ctx); err == nil && st.Status != wire.StatusStopped {
					adopt[c.ID] = client
					return true, nil
				}
			}
		}
		if c.Runtime.ExitFile != "" {
			if st, err := wire.ReadExit(c.Runtime.ExitFile); err == nil {
				return false, &container.ExitInfo{Code: st.ExitCode, FinishedAt: st.FinishedAt, OOMKilled: st.OOMKilled, Error: st.Error}
			}
		}
		// A shim killed with -9 may leave its container behind.
		e.deleteLost(ctx, c)
		return false, nil
	}
	remove := func(ctx context.Context, c *container.Container) error { return e.removeArtifacts(ctx, c) }
	rep, err := e.containers.Reconcile(ctx, probe, remove)
	if err != nil {
		return err
	}
	for id, client := range adopt {
		e.adoptJoin(ctx, id)
		e.adoptMounts(ctx, id)
		// The monitors of the containers adopted before this one run
		// already, and read these maps.
		e.runs.mu.Lock()
		e.runs.addShim(id, client)
		e.runs.mu.Unlock()
		e.adoptHealth(ctx, id)
		e.monitors.Add(1)
		go e.monitor(id, client)
	}
	e.unstageLeftovers()
	if err := e.volumes.UnmountUnused(); err != nil {
		e.log.Warn("unmounting unused volumes", "err", err)
	}
	e.sweepOrphans(ctx, adopt)
	e.sweepRootfs(ctx)
	lost, err := e.restoreNetworks(ctx)
	if err != nil {
		e.log.Warn("restoring networks", "err", err)
	}
	lost = e.joins.closure(lost)
	var stops sync.WaitGroup
	for _, id := range lost {
		stops.Go(func() { e.endNetworkless(ctx, id) })
	}
	stops.Wait()
	if n := len(rep.Exited) + len(rep.Lost) + len(rep.Removed) + len(rep.Dead) + len(adopt); n > 0 {
		e.log.Info("reconciled containers", "adopted", len(adopt), "exited", len(rep.Exited), "lost", len(rep.Lost), "removed", len(rep.Removed), "dead", len(rep.Dead))
	}
	e.restartAtStart(ctx)
	return nil
}

// endNetworkless stops an adopted container whose network namespace went
// with the daemon that made it (rootless: the namespaces are new at each
// daemon start, and nothing reaches into the old ones), or that shares
// such a namespace (--network container:<id>, adoptJoin). Left running it
// would be reachable by no one while its record showed its addresses and
// ports; a joiner would stay in the old namespace when its owner starts
// in a new one. --network host containers are in the host's namespace,
// where the engine is, and keep theirs. Docker without live-restore stops
// every container it finds alive before its API answers; here only
// those: stop signal, then SIGKILL after the timeout. A start (compose
// up, or the restart policy: restartAtStart) brings it back with a
// network.
func (e *Engine) endNetworkless(ctx context.Context, id string) {
	c, err := e.containers.Get(ctx, id)
	if err != nil || e.runs.client(id) == nil {
		return
	}
	e.log.Warn("stopping an adopted container: its network did not outlive the daemon that started it", "container", id)
	if err := e.stop(ctx, c, StopRequest{}); err != nil {
		e.log.Warn("stopping a container without its network", "container", id, "err", err)
	}
}

// adoptMounts counts, for an adopted container, the tmpfs volumes it has
// mounted, so that its exit lets go of them, and unmounts its shareable
// /dev/shm at its exit too.
func (e *Engine) adoptMounts(ctx context.Context, id string) {
	c, err := e.containers.Get(ctx, id)
	if err != nil {
		return
	}
	release, err := e.acquireVolumes(c)
	if err != nil {
		e.log.Warn("volumes of an adopted container", "container", id, "err", err)
		release = func() {}
	}
	if c.HostConfig != nil && c.HostConfig.IpcMode.IsShareable() {
		volumes := release
		release = func() { unmountShm(c); volumes() }
	}
	e.runs.mu.Lock()
	e.runs.held[id] = release
	e.runs.mu.Unlock()
}

// adoptHealth starts again the health probes of an adopted container
// (after live restore, every running container is one), counting its
// start period from its run's start, before its monitor, whose stopHealth
// must come after it.
func (e *Engine) adoptHealth(ctx context.Context, id string) {
	c, err := e.containers.Get(ctx, id)
	if err != nil {
		return
	}
	if probe := probeConfig(c); probe != nil {
		e.startHealth(c, probe, c.State.StartedAt)
	}
}

// adoptJoin restores, for an adopted container that shares another's
// network namespace, the knowledge that it does.
func (e *Engine) adoptJoin(ctx context.Context, id string) {
	c, err := e.containers.Get(ctx, id)
	if err != nil || c.HostConfig == nil || !c.HostConfig.NetworkMode.IsContainer() {
		return
	}
	if owner, err := e.containers.Get(ctx, c.HostConfig.NetworkMode.ConnectedContainer()); err == nil {
		e.joins.add(owner.ID, id)
	}
}

// closeRest closes what the engine holds once the containers are dealt
// with.
func (e *Engine) closeRest() error {
	if e.rtServer != nil {
		// It ends once no process of its own runs (any left running
		// keep it).
		e.rtServer.Close()
	}
	e.rootfs.Close()
	e.containers.Close()
	return nil
}

// sweepOrphans ends containers that libcontainer still knows but no record
// says are running: a daemon killed between spawning a shim and recording
// the start leaves a shim (or, if the shim died too, an init) waiting for a
// start that will never come.
func (e *Engine) sweepOrphans(ctx context.Context, adopted map[string]shimConn) {
	if e.opts.RuntimeBinary == "" {
		return
	}
	ents, err := os.ReadDir(filepath.Join(e.opts.StateDir, "runc"))
	if err != nil {
		return
	}
	for _, ent := range ents {
		id := ent.Name()
		if _, ok := adopted[id]; ok {
			continue
		}
		c, err := e.containers.Get(ctx, id)
		if err == nil && c.State.Running() {
			continue
		}
		bundle := filepath.Join(e.opts.StateDir, "containers", id)
		if err == nil {
			bundle = c.Runtime.BundleDir
			if client, err := e.shims.Connect(ctx, c.Runtime.ShimSocket); err == nil {
				client.Kill(ctx, syscall.SIGKILL)
				// The shim cleans up and exits once its container is gone.
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				client.Wait(wctx)
				cancel()
			}
		}
		if err := e.shims.Delete(ctx, e.opts.RuntimeBinary, bundle); err != nil {
			e.log.Warn("removing an orphaned container", "container", id, "err", err)
			continue
		}
		e.log.Info("removed an orphaned container process", "container", id)
	}
}
