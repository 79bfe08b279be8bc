package container

import (
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/go-units"
	containertypes "github.com/moby/moby/api/types/container"
)

// Status is where a container is in its life.
type Status string

// The statuses Docker reports. StatusRemoving is never stored in
// State.Status: removal is the State.Removing flag on top of the status the
// container had (see State.Effective), because a running container that is
// being force-removed is still running until it is killed.
const (
	StatusCreated    Status = "created"
	StatusRunning    Status = "running"
	StatusPaused     Status = "paused"
	StatusRestarting Status = "restarting"
	StatusRemoving   Status = "removing"
	StatusExited     Status = "exited"
	StatusDead       Status = "dead"
)

// State is a container's run state. The zero value is not valid; Store.Create
// starts every container as StatusCreated.
//
// Change it only through the Set methods, inside Store.Update: they refuse
// illegal transitions with a *StateError carrying Docker's message and
// class. The Check methods answer the same question without changing
// anything, so the engine can refuse an operation before doing any work.
type State struct {
	// Status is created, running, paused, restarting, exited or dead.
	Status Status
	// Removing is set while the container is being removed (and survives
	// a crash, so that Reconcile finishes or abandons the removal).
	Removing bool `json:",omitempty"`
	// Pid is the container's init process while it runs, else 0.
	Pid      int
	ExitCode int
	// Error is the last error of a start, exit or removal.
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
	OOMKilled  bool
	// Health is the state of the healthcheck's probes, for containers
	// that have one (engine/health.go).
	Health *containertypes.Health `json:",omitempty"`

	// ended is set by the transitions that end a run; Store.Update uses it
	// to wake waiters and clears nothing on disk (it is not persisted).
	ended bool
}

// Running reports whether a process exists for the container: running,
// paused (frozen) and restarting all count, as in Docker.
func (s State) Running() bool {
	switch s.Status {
	case StatusRunning, StatusPaused, StatusRestarting:
		return true
	}
	return false
}

// Paused reports whether the container is frozen.
func (s State) Paused() bool { return s.Status == StatusPaused }

// Effective is the status Docker reports: a live container shows its run
// status even while it is being removed; otherwise removal shows as
// "removing".
func (s State) Effective() Status {
	if s.Removing && !s.Running() {
		return StatusRemoving
	}
	return s.Status
}

// HealthStatus is the container's health as docker ps --filter health
// sees it: "none" without a healthcheck.
func (s State) HealthStatus() containertypes.HealthStatus {
	if s.Health == nil || s.Health.Status == "" {
		return containertypes.NoHealthcheck
	}
	return s.Health.Status
}

// Describe is docker ps's STATUS column at time now: "Up 3 seconds",
// "Up 2 minutes (Paused)", "Exited (0) 5 seconds ago", "Created"…, with
// go-units' HumanDuration as dockerd uses.
func (s State) Describe(now time.Time) string {
	switch {
	case s.Status == StatusRestarting:
		return fmt.Sprintf("Restarting (%d) %s ago", s.ExitCode, units.HumanDuration(now.Sub(s.FinishedAt)))
	case s.Running():
		up := "Up " + units.HumanDuration(now.Sub(s.StartedAt))
		if s.Paused() {
			return up + " (Paused)"
		}
		if h := s.Health; h != nil && h.Status != containertypes.NoHealthcheck && h.Status != "" {
			if h.Status == containertypes.Starting {
				return up + " (health: starting)"
			}
			return up + " (" + string(h.Status) + ")"
		}
		return up
	case s.Removing:
		return "Removal In Progress"
	case s.Status == StatusDead:
		return "Dead"
	case s.StartedAt.IsZero():
		return "Created"
	case s.FinishedAt.IsZero():
		return ""
	}
	return fmt.Sprintf("Exited (%d) %s ago", s.ExitCode, units.HumanDuration(now.Sub(s.FinishedAt)))
}

// StateError is a refused operation or transition. Its message is Docker's
// and it unwraps to the errdefs class Docker answers with (ErrNotModified
// for "already running/stopped", ErrConflict otherwise).
type StateError struct {
	// Status is the effective status the container was in.
	Status Status
	msg    string
	class  error
}

func (e *StateError) Error() string { return e.msg }

// Unwrap returns the errdefs class.
func (e *StateError) Unwrap() error { return e.class }

func (s State) refuse(class error, format string, args ...any) error {
	return &StateError{Status: s.Effective(), msg: fmt.Sprintf(format, args...), class: class}
}

func (s State) errMarkedForRemoval() error {
	return s.refuse(errdefs.ErrConflict, "container is marked for removal and cannot be started")
}

// CheckStart says whether the container may be started.
func (s State) CheckStart() error {
	// Paused first: a paused container is also running, and has to be
	// unpaused rather than started.
	switch {
	case s.Paused():
		return s.refuse(errdefs.ErrConflict, "cannot start a paused container, try unpause instead")
	case s.Running():
		// Not a failure: the API answers 304, the container already is
		// where the caller wants it.
		return s.refuse(errdefs.ErrNotModified, "container is already running")
	case s.Removing || s.Status == StatusDead:
		return s.errMarkedForRemoval()
	}
	return nil
}

// CheckRestart says whether the container may be restarted (stopped if it
// runs, then started).
func (s State) CheckRestart() error {
	if s.Removing || s.Status == StatusDead {
		return s.errMarkedForRemoval()
	}
	return nil
}

// CheckStop says whether the container may be stopped.
func (s State) CheckStop() error {
	if !s.Running() {
		return s.refuse(errdefs.ErrNotModified, "container is already stopped")
	}
	return nil
}

// CheckKill says whether a signal may be sent. id is the container's ID,
// which Docker's message names.
func (s State) CheckKill(id string) error {
	if !s.Running() {
		return s.refuse(errdefs.ErrConflict, "container %s is not running", id)
	}
	return nil
}

// CheckPause says whether the container may be paused; id as for CheckKill.
func (s State) CheckPause(id string) error {
	switch {
	case !s.Running():
		return s.refuse(errdefs.ErrConflict, "container %s is not running", id)
	case s.Paused():
		return s.refuse(errdefs.ErrConflict, "container %s is already paused", id)
	case s.Status == StatusRestarting:
		return s.refuse(errdefs.ErrConflict, "Container %s is restarting, wait until the container is running", id)
	}
	return nil
}

// CheckUnpause says whether the container may be unpaused; id as for
// CheckKill. Docker answers this one with a 500; a conflict is what it is.
func (s State) CheckUnpause(id string) error {
	if !s.Paused() {
		return s.refuse(errdefs.ErrConflict, "Container %s is not paused", id)
	}
	return nil
}

// CheckExec says whether a process may be exec'd; id as for CheckKill.
func (s State) CheckExec(id string) error {
	switch {
	case !s.Running():
		return s.refuse(errdefs.ErrConflict, "container %s is not running", id)
	case s.Paused():
		return s.refuse(errdefs.ErrConflict, "Container %s is paused, unpause the container before exec", id)
	case s.Status == StatusRestarting:
		return s.refuse(errdefs.ErrConflict, "Container %s is restarting, wait until the container is running", id)
	}
	return nil
}

// CheckAttach says whether a client may attach. ref is the name or ID the
// client used, which Docker's message repeats.
func (s State) CheckAttach(ref string) error {
	switch {
	case s.Paused():
		return s.refuse(errdefs.ErrConflict, "container %s is paused, unpause the container before attach", ref)
	case s.Status == StatusRestarting:
		return s.refuse(errdefs.ErrConflict, "container %s is restarting, wait until the container is running", ref)
	}
	return nil
}

// CheckRemove says whether the container may be removed. ref is the name
// or ID the client used, which Docker's message repeats. With force, a live
// container may be removed: the caller kills it first.
func (s State) CheckRemove(ref string, force bool) error {
	switch {
	case s.Removing:
		return s.refuse(errdefs.ErrConflict, "removal of container %s is already in progress", ref)
	case force || !s.Running():
		return nil
	case s.Paused():
		return s.refuse(errdefs.ErrConflict, "cannot remove container %q: container is paused and must be unpaused first", ref)
	}
	return s.refuse(errdefs.ErrConflict, "cannot remove container %q: container is %s: stop the container before removing or force remove", ref, s.Status)
}

// SetRunning records a started process. It is legal from created, exited
// and restarting; otherwise it refuses as CheckStart does.
func (s *State) SetRunning(pid int, startedAt time.Time) error {
	if s.Status != StatusRestarting {
		if err := s.CheckStart(); err != nil {
			return err
		}
	} else if s.Removing {
		return s.errMarkedForRemoval()
	}
	if startedAt.IsZero() {
		startedAt = time.Now()
	}
	s.Status = StatusRunning
	s.Pid = pid
	s.StartedAt = startedAt.UTC()
	s.ExitCode = 0
	s.Error = ""
	s.OOMKilled = false
	return nil
}

// SetExited records the end of the container's process. It is legal while
// a process exists (also during a removal); a second exit of a stopped
// container is refused as "already stopped".
func (s *State) SetExited(e ExitInfo) error {
	if err := s.CheckStop(); err != nil {
		return err
	}
	s.end(e)
	s.Status = StatusExited
	return nil
}

// SetRestarting records an exit after which the restart policy starts the
// container again. It is legal from running and paused, not during a
// removal.
func (s *State) SetRestarting(e ExitInfo) error {
	switch {
	case s.Removing:
		return s.errMarkedForRemoval()
	case s.Status == StatusRestarting:
		return s.refuse(errdefs.ErrNotModified, "container is already restarting")
	case !s.Running():
		return s.refuse(errdefs.ErrConflict, "container is not running")
	}
	s.end(e)
	s.Status = StatusRestarting
	return nil
}

func (s *State) end(e ExitInfo) {
	if e.FinishedAt.IsZero() {
		e.FinishedAt = time.Now()
	}
	s.Pid = 0
	s.ExitCode = e.Code
	s.FinishedAt = e.FinishedAt.UTC()
	s.OOMKilled = e.OOMKilled
	s.Error = e.Error
	s.ended = true
}

// SetStartFailed records a start that never produced a process: like
// Docker, the container keeps its status (created stays created) with the
// exit code (127 command not found, 126 not executable, 128 other) and the
// error. A failed restart leaves a restarting container exited.
func (s *State) SetStartFailed(code int, msg string) error {
	switch s.Status {
	case StatusRestarting:
		s.end(ExitInfo{Code: code, Error: msg})
		s.Status = StatusExited
		return nil
	case StatusCreated, StatusExited:
		if s.Removing {
			return s.errMarkedForRemoval()
		}
		s.ExitCode = code
		s.Error = msg
		return nil
	}
	return s.CheckStart()
}

// SetPaused records a frozen container; id as for CheckKill.
func (s *State) SetPaused(id string) error {
	if err := s.CheckPause(id); err != nil {
		return err
	}
	s.Status = StatusPaused
	return nil
}

// SetUnpaused records a thawed container; id as for CheckKill.
func (s *State) SetUnpaused(id string) error {
	if err := s.CheckUnpause(id); err != nil {
		return err
	}
	s.Status = StatusRunning
	return nil
}

// SetRemoving marks the start of a removal, refused as CheckRemove refuses.
// The mark is persisted: a removal interrupted by a crash is finished or
// abandoned by Reconcile.
func (s *State) SetRemoving(ref string, force bool) error {
	if err := s.CheckRemove(ref, force); err != nil {
		return err
	}
	s.Removing = true
	return nil
}

// CancelRemoving undoes SetRemoving after a removal failed early (the
// container is still whole, e.g. it could not be killed).
func (s *State) CancelRemoving() {
	s.Removing = false
}

// SetDead records a container that must never run again: Docker marks a
// container dead during its removal, once its process is gone and before
// its filesystem is released, so that a removal that fails half-way (or a
// crash) leaves a container that can only be removed. It is refused while a
// process exists. The Removing mark is left alone (CancelRemoving ends it
// when the removal gives up). msg, when not empty, replaces the recorded
// error.
func (s *State) SetDead(msg string) error {
	if s.Running() {
		return s.refuse(errdefs.ErrConflict, "cannot mark container dead: container is %s", s.Status)
	}
	s.Status = StatusDead
	if msg != "" {
		s.Error = msg
	}
	return nil
}
