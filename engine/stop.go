package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim"
)

// StopRequest is POST /containers/{id}/stop and /restart.
type StopRequest struct {
	// Timeout in seconds before SIGKILL; nil: the container's StopTimeout,
	// else 10. A negative value waits forever.
	Timeout *int
	Signal  string
}

// ContainerStop sends the stop signal, then SIGKILL after the timeout. A
// stopped container is errdefs.ErrNotModified (304). A client that goes
// away does not end the stop: as on Docker, the container is stopped all
// the same (the client's cancel would leave it signalled but never killed).
func (e *Engine) ContainerStop(ctx context.Context, ref string, req StopRequest) error {
	ctx = context.WithoutCancel(ctx)
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if c, err = e.afterStart(ctx, c.ID); err != nil {
		return err
	}
	if err := c.State.CheckStop(); err != nil {
		return err
	}
	if e.endRestart(ctx, c.ID) {
		return nil
	}
	e.restarts.markStopped(c.ID, true, false) // stop adds exitOnNext
	return e.stop(ctx, c, req)
}

func (e *Engine) stop(ctx context.Context, c *container.Container, req StopRequest) (err error) {
	sig, err := stopSignal(c, req.Signal)
	if err != nil {
		return err
	}
	timeout := 10
	if c.Config.StopTimeout != nil {
		timeout = *c.Config.StopTimeout
	}
	if req.Timeout != nil {
		timeout = *req.Timeout
	}
	done, err := e.containers.Wait(ctx, c.ID, container.WaitNotRunning)
	if err != nil {
		return err
	}
	// A stopped container is not restarted by its policy (a restart's
	// stop, the daemon's own, compose's).
	e.restarts.markStopped(c.ID, false, true)
	client := e.runs.client(c.ID)
	if client == nil {
		// It ended meanwhile and monitor is recording its exit: a stop
		// returns once the container is stopped, as Docker's does.
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := client.Kill(ctx, sig); err == nil {
		e.containerEvent(c, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(sig))})
	} else if !signalMissed(err) {
		return err
	}
	defer func() {
		if err == nil {
			e.containerEvent(c, eventtypes.ActionStop, nil)
		}
	}()
	var expire <-chan time.Time
	if timeout >= 0 {
		expire = time.After(time.Duration(timeout) * time.Second)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-expire:
	}
	return e.killAndWait(ctx, c.ID)
}

// killAndWait sends SIGKILL and waits until the exit is recorded.
func (e *Engine) killAndWait(ctx context.Context, id string) error {
	done, err := e.containers.Wait(ctx, id, container.WaitNotRunning)
	if err != nil {
		return err
	}
	if client := e.runs.client(id); client != nil {
		if err := client.Kill(ctx, syscall.SIGKILL); err == nil {
			e.containerEventByID(ctx, id, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(syscall.SIGKILL))})
		} else if !signalMissed(err) {
			return err
		}
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signalMissed reports whether a signal found the container's process
// gone: the shim answers that it exited (errdefs.ErrConflict) or has gone
// itself (shim.ErrNoShim). Its exit is then being recorded (monitor), and
// a stop or kill racing with the container's own end, as compose's stop of
// every service once one has exited does, waits for that instead of
// failing.
func signalMissed(err error) bool {
	return errors.Is(err, errdefs.ErrConflict) || errors.Is(err, shim.ErrNoShim) || errors.Is(err, errdefs.ErrNotModified)
}

// ContainerKill sends a signal (default SIGKILL) to a running container.
// As on Docker, it goes on if its client goes away: a SIGKILL is followed
// through to the recorded exit.
func (e *Engine) ContainerKill(ctx context.Context, ref, signal string) error {
	ctx = context.WithoutCancel(ctx)
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	// The signal is checked before the state, as Docker's router does.
	sig := syscall.SIGKILL
	if signal != "" {
		if sig, err = ParseSignal(signal); err != nil {
			return err
		}
	}
	if c, err = e.afterStart(ctx, c.ID); err != nil {
		return err
	}
	if err := c.State.CheckKill(c.ID); err != nil {
		return err
	}
	if e.endRestart(ctx, c.ID) {
		return nil
	}
	own, _ := stopSignal(c, "")
	e.restarts.markStopped(c.ID, true, sig == syscall.SIGKILL || sig == own)
	client := e.runs.client(c.ID)
	if client == nil {
		return errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", c.ID))
	}
	if sig != syscall.SIGKILL {
		// A process that ended meanwhile is no error, as on Docker (its
		// kill of a task already gone succeeds).
		if err := client.Kill(ctx, sig); err != nil && !signalMissed(err) {
			return err
		}
		e.containerEvent(c, eventtypes.ActionKill, map[string]string{"signal": strconv.Itoa(int(sig))})
		return nil
	}
	// As Docker: SIGKILL returns once the exit is recorded, so that a
	// docker kill is followed by a stopped container.
	return e.killAndWait(ctx, c.ID)
}

// ContainerRestart stops (if running) and starts a container. The restart
// is one step: as on Docker, a client that goes away during the stop does
// not leave the container stopped, it is started all the same.
func (e *Engine) ContainerRestart(ctx context.Context, ref string, req StopRequest) error {
	ctx = context.WithoutCancel(ctx)
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if c, err = e.afterStart(ctx, c.ID); err != nil {
		return err
	}
	if err := c.State.CheckRestart(); err != nil {
		return err
	}
	if e.endRestart(ctx, c.ID) {
		c.State.Status = container.StatusExited
	}
	if c.State.Running() {
		e.restarts.markRestart(c.ID)
		if err := e.stop(ctx, c, req); err != nil {
			return err
		}
	}
	if err := e.ContainerStart(ctx, c.ID); err != nil {
		return err
	}
	e.containerEvent(c, eventtypes.ActionRestart, nil)
	return nil
}

// ParseSignal reads "SIGTERM", "TERM", "term" or "15".
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid signal: %s", s))
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid signal: %s", s))
}

// stopSignal is the signal a stop sends: name when given, else c's stop
// signal, else SIGTERM.
func stopSignal(c *container.Container, name string) (syscall.Signal, error) {
	if name == "" && c.Config != nil {
		name = c.Config.StopSignal
	}
	if name == "" {
		return syscall.SIGTERM, nil
	}
	return ParseSignal(name)
}
