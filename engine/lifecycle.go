package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim"
)

// reconcile makes every record true after a crash: a container whose shim
// still runs is adopted again; one whose shim is gone gets the exit the
// shim recorded, or is marked lost.
func (e *Engine) reconcile(ctx context.Context) error {
	adopt := map[string]*shim.Client{}
	probe := func(ctx context.Context, c *container.Container) (bool, *container.ExitInfo) {
		if c.Runtime.ShimSocket != "" {
			if client, err := shim.Connect(ctx, c.Runtime.ShimSocket); err == nil {
				if st, err := client.State(ctx); err == nil && st.Status != shim.StatusStopped {
					adopt[c.ID] = client
					return true, nil
				}
			}
		}
		if c.Runtime.ExitFile != "" {
			if st, err := shim.ReadExit(c.Runtime.ExitFile); err == nil {
				return false, &container.ExitInfo{Code: st.ExitCode, FinishedAt: st.FinishedAt, OOMKilled: st.OOMKilled, Error: st.Error}
			}
		}
		if c.Runtime.BundleDir != "" && e.opts.ShimBinary != "" {
			// A shim killed with -9 may leave its container behind.
			shim.Delete(ctx, e.opts.ShimBinary, c.Runtime.BundleDir)
		}
		return false, nil
	}
	remove := func(ctx context.Context, c *container.Container) error { return e.removeArtifacts(ctx, c) }
	rep, err := e.containers.Reconcile(ctx, probe, remove)
	if err != nil {
		return err
	}
	for id, client := range adopt {
		e.runs.shims[id] = client
		go e.monitor(id, client)
	}
	if n := len(rep.Exited) + len(rep.Lost) + len(rep.Removed) + len(rep.Dead) + len(adopt); n > 0 {
		e.log.Info("reconciled containers", "adopted", len(adopt), "exited", len(rep.Exited), "lost", len(rep.Lost), "removed", len(rep.Removed), "dead", len(rep.Dead))
	}
	return nil
}

// Close stops every running container (their stop signal, then SIGKILL
// after their timeout) and waits until each exit is recorded.
func (e *Engine) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.runs.mu.Lock()
	ids := make([]string, 0, len(e.runs.shims))
	for id := range e.runs.shims {
		ids = append(ids, id)
	}
	e.runs.mu.Unlock()
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
	return nil
}
