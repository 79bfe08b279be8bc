package container

import (
	"context"
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
)

// WaitCondition is what a waiter waits for, with the API's names.
type WaitCondition string

const (
	// WaitNotRunning answers at once for a container without a process,
	// else at the end of the current run.
	WaitNotRunning WaitCondition = "not-running"
	// WaitNextExit answers at the end of the next run, even for a
	// container that is not running yet: docker run waits this way before
	// it starts the container, so that a quick exit is not missed.
	WaitNextExit WaitCondition = "next-exit"
	// WaitRemoved answers when the container is deleted.
	WaitRemoved WaitCondition = "removed"
)

// WaitResult is how the awaited run ended: the exit code and the recorded
// error, if any (POST /containers/{id}/wait's StatusCode and Error).
type WaitResult struct {
	ExitCode int
	Error    string
}

type waiter struct {
	cond WaitCondition
	ch   chan WaitResult
	stop func() bool // cancels the context hook
}

// Wait registers a waiter for container id and returns the channel its
// result arrives on. Registration is done when Wait returns, so a start
// after it cannot race past the waiter. If ctx ends first the channel is
// closed without a value. An empty condition means WaitNotRunning; an
// unknown one is ErrInvalidArgument.
func (s *Store) Wait(ctx context.Context, id string, cond WaitCondition) (<-chan WaitResult, error) {
	switch cond {
	case "":
		cond = WaitNotRunning
	case WaitNotRunning, WaitNextExit, WaitRemoved:
	default:
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid condition: %q", cond))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.rec == nil || e.deleted {
		return nil, noSuchContainer(id)
	}
	w := &waiter{cond: cond, ch: make(chan WaitResult, 1)}
	if cond == WaitNotRunning && !e.rec.State.Running() {
		w.ch <- result(e.rec)
		return w.ch, nil
	}
	e.waiters = append(e.waiters, w)
	w.stop = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		// Answered in the meantime: the value is in the channel.
		if i := slices.Index(e.waiters, w); i >= 0 {
			e.waiters = slices.Delete(e.waiters, i, i+1)
			close(w.ch)
		}
	})
	return w.ch, nil
}

func result(c *Container) WaitResult {
	return WaitResult{ExitCode: c.State.ExitCode, Error: c.State.Error}
}

// wakeLocked answers e's waiters with its record: those waiting for an exit
// when a run ended, all of them when the container was removed. The
// caller holds s.mu.
func (s *Store) wakeLocked(e *entry, removed bool) {
	res := result(e.rec)
	kept := e.waiters[:0]
	for _, w := range e.waiters {
		if w.cond == WaitRemoved && !removed {
			kept = append(kept, w)
			continue
		}
		w.stop()
		w.ch <- res
	}
	clear(e.waiters[len(kept):])
	e.waiters = kept
}
