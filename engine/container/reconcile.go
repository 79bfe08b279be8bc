package container

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// LostError is the error recorded for a container whose process went away
// without anyone recording how (its shim was killed, or the machine went
// down), with Docker's exit code for that case, 255.
const LostError = "container was lost: the daemon stopped while it ran"

// LostExitCode is the exit code recorded with LostError.
const LostExitCode = 255

// ProbeFunc tells Reconcile whether a container's process still exists
// and, if not, how it ended (nil when nothing was recorded). It is the
// runtime side's knowledge: is the shim's socket alive, did it write the
// exit file. It gets a copy of the record and runs under the container's
// lock, so it must not call the Store for that container.
type ProbeFunc func(ctx context.Context, c *Container) (alive bool, exit *ExitInfo)

// RemoveFunc finishes a removal that a crash interrupted: it stops the
// process if one is left and releases everything but the record (rootfs,
// mounts, shim state). On success Reconcile deletes the record. Like
// ProbeFunc it gets a copy and runs under the container's lock.
type RemoveFunc func(ctx context.Context, c *Container) error

// ReconcileReport says what Reconcile changed, by container ID.
type ReconcileReport struct {
	// Exited were running (or paused, restarting) and are not any more;
	// Lost is the subset whose end nobody recorded.
	Exited, Lost []string
	// Removed finished an interrupted removal; Dead could not, and can
	// only be removed again.
	Removed, Dead []string
}

// Reconcile makes every record true again after the daemon was down; the
// daemon calls it once at start, before serving. As dockerd does on
// restore:
//
//   - A container recorded with a process (running, paused, restarting)
//     is probed. If it lives, nothing changes. If not, it becomes exited
//     with the exit the probe reports, or with LostExitCode and LostError
//     when nothing was recorded.
//   - A container whose removal was interrupted is handed to remove (after
//     the probe, so it knows whether a process is left); if that succeeds
//     the record is deleted, otherwise (or without remove) it is marked
//     dead, unless its process still lives, so that the user can remove it
//     again.
//
// Created containers are left alone: they never had a process. Errors for
// one container do not stop the others; they are returned together.
func (s *Store) Reconcile(ctx context.Context, probe ProbeFunc, remove RemoveFunc) (ReconcileReport, error) {
	var rep ReconcileReport
	s.mu.RLock()
	var recs []*Container
	for _, e := range s.byID {
		if e.rec != nil {
			recs = append(recs, e.rec)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(recs, func(a, b *Container) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})

	var errs []error
	for _, rec := range recs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := s.reconcileOne(ctx, rec.ID, probe, remove, &rep); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", rec.ID, err))
			s.log.Error("container records: reconcile", "id", rec.ID, "err", err)
		}
	}
	return rep, errors.Join(errs...)
}

func (s *Store) reconcileOne(ctx context.Context, id string, probe ProbeFunc, remove RemoveFunc, rep *ReconcileReport) error {
	return s.locked(ctx, id, func(e *entry, rec *Container) error {
		if !rec.State.Running() && !rec.State.Removing {
			return nil
		}
		c := deepCopy(rec)
		alive := false
		if c.State.Running() {
			var exit *ExitInfo
			alive, exit = probe(ctx, c.Clone())
			if !alive {
				lost := exit == nil
				if lost {
					exit = &ExitInfo{Code: LostExitCode, FinishedAt: s.now(), Error: LostError}
				}
				if err := c.State.SetExited(*exit); err != nil {
					return err
				}
				if err := s.commit(e, c, true); err != nil {
					return err
				}
				rep.Exited = append(rep.Exited, id)
				if lost {
					rep.Lost = append(rep.Lost, id)
				}
				s.log.Info("container records: container stopped while the daemon was down",
					"id", id, "exitCode", exit.Code, "lost", lost)
			}
		}
		if !c.State.Removing {
			return nil
		}
		return s.finishRemoval(ctx, e, c, alive, remove, rep)
	})
}

// finishRemoval completes or abandons an interrupted removal of c; the
// caller holds e.lock.
func (s *Store) finishRemoval(ctx context.Context, e *entry, c *Container, alive bool, remove RemoveFunc, rep *ReconcileReport) error {
	var why error = errors.New("removal interrupted")
	if remove != nil {
		if why = remove(ctx, c.Clone()); why == nil {
			if err := s.deleteLocked(e, c); err != nil {
				return err
			}
			rep.Removed = append(rep.Removed, c.ID)
			return nil
		}
		s.log.Warn("container records: finishing removal", "id", c.ID, "err", why)
	}
	c.State.CancelRemoving()
	if !alive {
		if err := c.State.SetDead(fmt.Sprintf("removal failed: %v", why)); err != nil {
			return err
		}
		rep.Dead = append(rep.Dead, c.ID)
	}
	return s.commit(e, c, false)
}
