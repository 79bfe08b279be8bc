package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

// Restart policies, as Docker's restart manager applies them:
//
//   - a container that exits on its own is started again by its policy:
//     always and unless-stopped every time, on-failure[:N] after a non-zero
//     exit, at most N times (RestartCount counts them; 0 is no limit);
//   - between its exit and the new start it is "restarting" (Running in
//     inspect, as Docker shows it), after a delay of 100 ms doubled at each
//     restart up to a minute, back to 100 ms once a run lasted 10 s;
//   - a stop or kill through the API marks it stopped by the user
//     (ManuallyStopped), which unless-stopped heeds; a stop, and a kill
//     with SIGKILL or the stop signal, also mean no restart at the exit
//     that follows (Docker's ExitOnNext); a stop, kill or removal of a
//     restarting container ends its wait;
//   - a start through the API clears that mark and RestartCount;
//   - at the daemon's start, containers whose policy says so are started
//     again: always, unless-stopped unless stopped by the user, on-failure
//     after a non-zero exit within its count. The daemon's own shutdown
//     stops no one "by the user".
type restarts struct {
	mu      sync.Mutex
	delay   map[string]time.Duration // the last delay, per container
	pending map[string]*time.Timer   // restarts waiting for their delay
	manual  map[string]stopMark      // stopped or killed through the API during this run
}

// stopMark is what a stop or kill through the API asked of the exit that
// follows.
type stopMark struct {
	manual     bool // stopped by the user: unless-stopped does not restart
	exitOnNext bool // no restart at all (a stop; SIGKILL or the stop signal)
	// restart: the stop of the user's restart, whose start follows; an
	// AutoRemove container is not removed at that exit, as on Docker.
	restart bool
}

const (
	restartFirstDelay = 100 * time.Millisecond
	restartMaxDelay   = time.Minute
	// restartResetAfter is how long a run must last for the delay to
	// start again from restartFirstDelay.
	restartResetAfter = 10 * time.Second
)

func newRestarts() *restarts {
	return &restarts{delay: map[string]time.Duration{}, pending: map[string]*time.Timer{}, manual: map[string]stopMark{}}
}

// shouldRestart tells whether policy starts a container again after an
// exit with code, restartCount restarts so far, stopped by the user or
// not, as Docker's restart manager decides.
func shouldRestart(policy containertypes.RestartPolicy, code, restartCount int, manual bool) bool {
	switch {
	case policy.IsAlways():
		return true
	case policy.IsUnlessStopped():
		return !manual
	case policy.IsOnFailure():
		max := policy.MaximumRetryCount
		return code != 0 && (max == 0 || restartCount < max)
	}
	return false
}

// restartAtBoot tells whether the daemon's start starts c again.
func restartAtBoot(c *container.Container) bool {
	if c.HostConfig == nil || c.State.Status != container.StatusExited || c.State.Removing {
		return false
	}
	return shouldRestart(c.HostConfig.RestartPolicy, c.State.ExitCode, c.RestartCount, c.ManuallyStopped)
}

// nextDelay is the wait before the restart of id after a run of ran.
func (r *restarts) nextDelay(id string, ran time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.delay[id]
	switch {
	case d == 0 || ran >= restartResetAfter:
		d = restartFirstDelay
	default:
		d = min(2*d, restartMaxDelay)
	}
	r.delay[id] = d
	return d
}

// markStopped records a stop or kill of id: manual when it came through
// the API (not the daemon's own stops), exitOnNext when no restart must
// follow the exit. Marks add up until the exit (or the next start).
func (r *restarts) markStopped(id string, manual, exitOnNext bool) {
	r.mu.Lock()
	m := r.manual[id]
	m.manual = m.manual || manual
	m.exitOnNext = m.exitOnNext || exitOnNext
	r.manual[id] = m
	r.mu.Unlock()
}

// markRestart records that the stop of id that follows is a restart's.
func (r *restarts) markRestart(id string) {
	r.mu.Lock()
	m := r.manual[id]
	m.restart = true
	r.manual[id] = m
	r.mu.Unlock()
}

// takeStopped is what stops and kills asked of the run that ended (or,
// at a start, of a run that ended before they came); it forgets them.
func (r *restarts) takeStopped(id string) stopMark {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.manual[id]
	delete(r.manual, id)
	return m
}

// schedule runs start after the delay, unless cancel comes first.
func (r *restarts) schedule(id string, delay time.Duration, start func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.pending[id]; t != nil {
		t.Stop()
	}
	r.pending[id] = time.AfterFunc(delay, func() {
		r.mu.Lock()
		_, ok := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ok {
			start()
		}
	})
}

// cancel drops the pending restart of id; it reports whether one was.
func (r *restarts) cancel(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.pending[id]
	if ok {
		t.Stop()
		delete(r.pending, id)
	}
	return ok
}

// forget drops what is known of id (a manual start, a removal).
func (r *restarts) forget(id string) {
	r.cancel(id)
	r.mu.Lock()
	delete(r.delay, id)
	r.mu.Unlock()
}

// cancelAll drops every pending restart (the daemon's shutdown).
func (r *restarts) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, t := range r.pending {
		t.Stop()
		delete(r.pending, id)
	}
}

// endRestart ends the wait of a restarting container (a stop, kill or
// removal came): it is exited with the code of its last run. It reports
// whether the container was restarting.
// Any other container is left as it is, its record not written again (a
// removal's path).
func (e *Engine) endRestart(ctx context.Context, id string) bool {
	e.restarts.cancel(id)
	err := e.containers.Update(ctx, id, func(c *container.Container) error {
		if c.State.Status != container.StatusRestarting {
			return errNotRestarting
		}
		c.ManuallyStopped = true
		return c.State.SetExited(container.ExitInfo{Code: c.State.ExitCode, FinishedAt: c.State.FinishedAt})
	})
	return err == nil
}

// errNotRestarting ends endRestart's Update without a write.
var errNotRestarting = errors.New("not restarting")

// restartByPolicy starts a restarting container once its delay is over.
func (e *Engine) restartByPolicy(id string) {
	ctx := context.Background()
	c, err := e.containers.Get(ctx, id)
	if err != nil || c.State.Status != container.StatusRestarting || e.closing.Load() {
		return
	}
	if err := e.start(ctx, c, true); err != nil {
		e.log.Warn("restart by policy failed", "container", id, "err", err)
	}
}

// restartAtStart starts again, in the background, the containers whose
// policy says so when the daemon starts.
func (e *Engine) restartAtStart(ctx context.Context) {
	all, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		e.log.Warn("restart policies at start", "err", err)
		return
	}
	for _, c := range all {
		if !restartAtBoot(c) {
			continue
		}
		e.monitors.Add(1)
		go func() {
			defer e.monitors.Done()
			if e.closing.Load() {
				return
			}
			if err := e.ContainerStart(context.WithoutCancel(ctx), c.ID); err != nil {
				e.log.Warn("restart policy at the daemon's start", "container", c.ID, "err", err)
			}
		}()
	}
}
