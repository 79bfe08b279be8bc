package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
)

// Health checks, as Docker runs them: a container whose config has a
// healthcheck (its own or its image's HEALTHCHECK) gets a probe every
// interval while it runs, an exec of the test command. Its State.Health
// goes from "starting" to "healthy" at the first success, and to
// "unhealthy" after Retries failures in a row (failures in the start
// period do not count while it is still starting). The last five results
// are kept with their output, and a change of status is a
// "health_status: …" event.

// Docker's defaults.
const (
	defaultProbeInterval = 30 * time.Second
	defaultProbeTimeout  = 30 * time.Second
	defaultStartInterval = 5 * time.Second
	defaultProbeRetries  = 3
	// maxProbeOutput is how much of a probe's output is kept.
	maxProbeOutput = 4096
	// probeKillGrace bounds the wait for the output of a probe killed
	// at its timeout.
	probeKillGrace = 2 * time.Second
	// maxHealthLog is how many results are kept.
	maxHealthLog = 5
)

// healthMonitors are the probe loops of running containers.
type healthMonitors struct {
	mu    sync.Mutex
	stops map[string]context.CancelFunc
}

// probeConfig is the effective healthcheck of c, nil when it has none.
func probeConfig(c *container.Container) *containertypes.HealthConfig {
	if c.Config == nil || c.Config.Healthcheck == nil {
		return nil
	}
	hc := *c.Config.Healthcheck
	if len(hc.Test) == 0 || hc.Test[0] == "NONE" {
		return nil
	}
	if hc.Interval == 0 {
		hc.Interval = defaultProbeInterval
	}
	if hc.Timeout == 0 {
		hc.Timeout = defaultProbeTimeout
	}
	if hc.StartInterval == 0 {
		hc.StartInterval = defaultStartInterval
	}
	if hc.Retries == 0 {
		hc.Retries = defaultProbeRetries
	}
	return &hc
}

// validateHealthcheck refuses what Docker refuses in a create's
// healthcheck: durations under a millisecond (0 is the default) and
// negative retries.
func validateHealthcheck(hc *containertypes.HealthConfig) error {
	if hc == nil {
		return nil
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Interval", hc.Interval}, {"Timeout", hc.Timeout}, {"StartPeriod", hc.StartPeriod}, {"StartInterval", hc.StartInterval}} {
		if d.v != 0 && d.v < time.Millisecond {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("%s in Healthcheck cannot be less than %s", d.name, time.Millisecond))
		}
	}
	if hc.Retries < 0 {
		return errdefs.ErrInvalidArgument.WithMessage("Retries in Healthcheck cannot be negative")
	}
	return nil
}

// probeCommand is the argv of a test: CMD runs its arguments, CMD-SHELL
// its string in the container's shell.
func probeCommand(c *container.Container, test []string) ([]string, error) {
	switch test[0] {
	case "CMD":
		if len(test) > 1 {
			return test[1:], nil
		}
	case "CMD-SHELL":
		if len(test) == 2 {
			shell := []string{"/bin/sh", "-c"}
			if len(c.Config.Shell) > 0 {
				shell = c.Config.Shell
			}
			return append(append([]string{}, shell...), test[1]), nil
		}
	}
	return nil, fmt.Errorf("unknown healthcheck test %q", test)
}

// startHealth begins the probes (hc, from probeConfig) of c's run that
// started at startedAt.
func (e *Engine) startHealth(c *container.Container, hc *containertypes.HealthConfig, startedAt time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	e.health.mu.Lock()
	if e.health.stops == nil {
		e.health.stops = map[string]context.CancelFunc{}
	}
	if old := e.health.stops[c.ID]; old != nil {
		old()
	}
	e.health.stops[c.ID] = cancel
	e.health.mu.Unlock()
	go e.probeLoop(ctx, c, hc, startedAt)
}

// startingHealth is the health of a run that begins: starting, the
// results of earlier runs kept, as Docker keeps them.
func startingHealth(h *containertypes.Health) *containertypes.Health {
	if h == nil {
		return &containertypes.Health{Status: containertypes.Starting}
	}
	h.Status, h.FailingStreak = containertypes.Starting, 0
	return h
}

// stopHealth ends the probes of container id (its run ended).
func (e *Engine) stopHealth(id string) {
	e.health.mu.Lock()
	defer e.health.mu.Unlock()
	if stop := e.health.stops[id]; stop != nil {
		stop()
		delete(e.health.stops, id)
	}
}

// stopAllHealth ends every probe loop (the engine closes).
func (e *Engine) stopAllHealth() {
	e.health.mu.Lock()
	defer e.health.mu.Unlock()
	for id, stop := range e.health.stops {
		stop()
		delete(e.health.stops, id)
	}
}

func (e *Engine) probeLoop(ctx context.Context, c *container.Container, hc *containertypes.HealthConfig, startedAt time.Time) {
	for {
		wait := hc.Interval
		if time.Since(startedAt) < hc.StartPeriod && e.healthStatus(ctx, c.ID) == containertypes.Starting {
			wait = hc.StartInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		res := e.probe(ctx, c, hc)
		if ctx.Err() != nil {
			return
		}
		inStart := time.Since(startedAt) < hc.StartPeriod
		if !e.recordProbe(ctx, c, startedAt, hc.Retries, res, inStart) {
			return // the run has ended (or the container is gone)
		}
	}
}

// healthStatus is the recorded status of id's health.
func (e *Engine) healthStatus(ctx context.Context, id string) containertypes.HealthStatus {
	c, err := e.containers.Get(ctx, id)
	if err != nil || c.State.Health == nil {
		return containertypes.NoHealthcheck
	}
	return c.State.Health.Status
}

// probe runs the test once as an exec in the container.
func (e *Engine) probe(ctx context.Context, c *container.Container, hc *containertypes.HealthConfig) *containertypes.HealthcheckResult {
	res := &containertypes.HealthcheckResult{Start: time.Now().UTC(), ExitCode: -1}
	defer func() { res.End = time.Now().UTC() }()
	cmd, err := probeCommand(c, hc.Test)
	if err != nil {
		res.Output = err.Error()
		return res
	}
	id, err := e.ExecCreate(ctx, c.ID, containertypes.ExecCreateRequest{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		res.Output = err.Error()
		return res
	}
	var out limitedBuffer
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.ExecStart(runCtx, id, ExecStartRequest{}, nil, &out, &out) }()
	// As in Docker, the timeout runs from the process's start: the time
	// the shim takes to start it is not the probe's.
	finished, timedOut := false, false
	select {
	case <-e.execStarted(id):
	case err = <-done:
		finished = true
	}
	if !finished {
		timer := time.NewTimer(hc.Timeout)
		select {
		case err = <-done:
		case <-timer.C:
			timedOut = true
		}
		timer.Stop()
	}
	if timedOut {
		e.killProbe(id)
		// What the probe wrote before its kill is reported with the
		// timeout, as Docker does: its streams end once it is gone,
		// unless a child it left holds them.
		grace := time.NewTimer(probeKillGrace)
		select {
		case <-done:
		case <-grace.C:
			cancel()
			<-done
		}
		grace.Stop()
		res.Output = fmt.Sprintf("Health check exceeded timeout (%v)", hc.Timeout)
		if o := out.String(); o != "" {
			res.Output += ": " + o
		}
		return res
	}
	if err != nil {
		res.Output = err.Error()
		return res
	}
	insp, err := e.ExecInspect(ctx, id)
	switch {
	case err != nil:
		res.Output = err.Error()
	case insp.ExitCode == nil:
		res.Output = "the probe's exit is unknown"
	default:
		res.ExitCode, res.Output = *insp.ExitCode, out.String()
	}
	return res
}

// execStarted is closed once exec id's start attempt is over (its
// process runs, or it failed to start).
func (e *Engine) execStarted(id string) <-chan struct{} {
	e.execs.mu.Lock()
	defer e.execs.mu.Unlock()
	if r := e.execs.m[id]; r != nil {
		return r.started
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// killProbe kills a probe that outlived its timeout, as Docker does, so
// that slow probes do not pile up. The exec's pid is the shim's child in
// the engine's pid namespace.
func (e *Engine) killProbe(execID string) {
	e.execs.mu.Lock()
	pid, running := 0, false
	if r := e.execs.m[execID]; r != nil {
		pid, running = r.pid, r.running && r.exitCode == nil
	}
	e.execs.mu.Unlock()
	if pid > 0 && running {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
			e.log.Warn("killing a health probe past its timeout", "exec", execID, "pid", pid, "err", err)
		}
	}
}

// recordProbe adds a result to the health of c's run that started at
// startedAt (not to a later run) and publishes a change of status. It
// is false when that run has ended.
func (e *Engine) recordProbe(ctx context.Context, c *container.Container, startedAt time.Time, retries int, res *containertypes.HealthcheckResult, inStart bool) bool {
	var before, after containertypes.HealthStatus
	err := e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		h := r.State.Health
		if !r.State.Running() || !r.State.StartedAt.Equal(startedAt) || h == nil {
			return errStaleProbe
		}
		before = h.Status
		h.Log = append(h.Log, res)
		if len(h.Log) > maxHealthLog {
			h.Log = h.Log[len(h.Log)-maxHealthLog:]
		}
		switch {
		case res.ExitCode == 0:
			h.Status, h.FailingStreak = containertypes.Healthy, 0
		case inStart && h.Status == containertypes.Starting:
			// Failures in the start period do not count.
		default:
			h.FailingStreak++
			if h.FailingStreak >= retries {
				h.Status = containertypes.Unhealthy
			}
		}
		after = h.Status
		return nil
	})
	if err != nil {
		return !errors.Is(err, errStaleProbe) && !errdefs.IsNotFound(err)
	}
	if after != before {
		e.containerEventByID(ctx, c.ID, eventtypes.Action("health_status: "+string(after)), nil)
	}
	return true
}

// errStaleProbe is a probe result of a run that has ended.
var errStaleProbe = errors.New("the probed run has ended")

// limitedBuffer keeps the first maxProbeOutput bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxProbeOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(b.buf.String(), "")
}
