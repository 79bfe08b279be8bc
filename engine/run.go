package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
	"github.com/hutch-engine/hutch/engine/spec"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// runs tracks the shims of running containers and the attach requests
// that arrived before their container started (docker run attaches first).
type runs struct {
	mu      sync.Mutex
	shims   map[string]shimConn
	pending map[string][]*pendingAttach
	// starting has a channel for each start under way, closed when it
	// ends; removing counts the removals under way, which no start may
	// overlap.
	starting map[string]chan struct{}
	removing map[string]int
	// held lets go of the mounts a running container's start made for
	// it: its tmpfs volumes, a shareable /dev/shm.
	held map[string]func()
	// attached are the live attachments to a container's output: its
	// exit is recorded once they have passed on all of it.
	attached map[string][]*shim.Attachment
	// recorded has, for each run, a channel closed once its exit is
	// recorded and its network released (the run's monitor).
	recorded map[string]chan struct{}
}

type pendingAttach struct {
	opts shim.AttachOptions
	// done receives the attachment once the container started, or the
	// start error.
	done chan attachResult
}

type attachResult struct {
	a   *shim.Attachment
	err error
	// recorded is the run's runs.recorded channel.
	recorded <-chan struct{}
}

func newRuns() *runs {
	return &runs{shims: map[string]shimConn{}, pending: map[string][]*pendingAttach{}, starting: map[string]chan struct{}{}, removing: map[string]int{}, held: map[string]func(){}, attached: map[string][]*shim.Attachment{}, recorded: map[string]chan struct{}{}}
}

// releaseHeld lets go of the mounts container id's run holds (runs.held),
// if it has not yet.
func (e *Engine) releaseHeld(id string) {
	e.runs.mu.Lock()
	release := e.runs.held[id]
	delete(e.runs.held, id)
	e.runs.mu.Unlock()
	if release != nil {
		release()
	}
}

// addShim makes client the shim of id's run; the caller holds r.mu.
func (r *runs) addShim(id string, client shimConn) {
	r.shims[id] = client
	r.recorded[id] = make(chan struct{})
}

// endRecorded closes the recorded channel of id's run, if it is still
// the one given.
func (r *runs) endRecorded(id string, ch chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch != nil && r.recorded[id] == ch {
		delete(r.recorded, id)
		close(ch)
	}
}

func (r *runs) client(id string) shimConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shims[id]
}

// holdStarts waits for a start of id under way to end, and keeps other
// starts of id out until end is called.
func (e *Engine) holdStarts(ctx context.Context, id string) (end func(), err error) {
	for {
		e.runs.mu.Lock()
		started := e.runs.starting[id]
		if started == nil {
			e.runs.removing[id]++
			e.runs.mu.Unlock()
			return func() {
				e.runs.mu.Lock()
				if e.runs.removing[id]--; e.runs.removing[id] <= 0 {
					delete(e.runs.removing, id)
				}
				e.runs.mu.Unlock()
			}, nil
		}
		e.runs.mu.Unlock()
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// afterStart reads container id once a start of it under way has ended,
// at once when none is. A signal, a stop, a restart or a pause that comes
// during a start waits for it, as Docker's wait for the container's lock:
// the process's first output reaches an attached client before the start
// is recorded, and docker run's signal proxy forwards a Ctrl-C at once.
// Answered from the record as it was, the container was "not running" and
// the signal lost. The record is read after the look for a start: read
// before, it can be from before a start that ended since.
func (e *Engine) afterStart(ctx context.Context, id string) (*container.Container, error) {
	e.runs.mu.Lock()
	started := e.runs.starting[id]
	e.runs.mu.Unlock()
	if started != nil {
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.containers.Get(ctx, id)
}

// ContainerStart starts a created or stopped container. A running one is
// errdefs.ErrNotModified (304). The start is the user's: it ends a
// restarting container's wait and clears its restart count.
func (e *Engine) ContainerStart(ctx context.Context, ref string) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if err := c.State.CheckStart(); err != nil {
		return err
	}
	e.restarts.forget(c.ID)
	return e.start(ctx, c, false)
}

// start starts c: by its restart policy (byPolicy: c is restarting, its
// restart count goes on) or as the user asked.
func (e *Engine) start(ctx context.Context, c *container.Container, byPolicy bool) error {
	e.restarts.takeStopped(c.ID) // of a run that had ended before they came
	e.runs.mu.Lock()
	if e.runs.starting[c.ID] != nil {
		e.runs.mu.Unlock()
		return errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is already being started", c.ID[:12]))
	}
	if e.runs.removing[c.ID] > 0 {
		e.runs.mu.Unlock()
		return container.State{Status: c.State.Status, Removing: true}.CheckStart()
	}
	started := make(chan struct{})
	e.runs.starting[c.ID] = started
	e.runs.mu.Unlock()
	defer func() {
		e.runs.mu.Lock()
		delete(e.runs.starting, c.ID)
		e.runs.mu.Unlock()
		close(started)
	}()

	endQueue := e.phase("start/queue", c.ID)
	release, err := e.starts.enter(ctx, startAge(c, time.Now()))
	endQueue()
	if err != nil {
		return err
	}
	defer release()
	endShim := e.phase("start/shim", c.ID)
	client, err := e.startShim(ctx, c)
	endShim()
	if err != nil {
		e.failPending(c.ID, err)
		bg := context.WithoutCancel(ctx)
		code := 128
		var se *wire.StartError
		if errors.As(err, &se) {
			code = se.ExitCode
		} else if errdefs.IsInvalidArgument(err) {
			code = 127
		}
		e.containers.Update(bg, c.ID, func(c *container.Container) error {
			return c.State.SetStartFailed(code, err.Error())
		})
		// As Docker: a --rm container that cannot start is removed
		// (docker run --rm waits for that).
		if c.HostConfig != nil && c.HostConfig.AutoRemove {
			if e.containers.Update(bg, c.ID, func(c *container.Container) error { return c.State.SetRemoving(c.ID, true) }) == nil {
				e.finishRemove(bg, c.ID, true)
			}
		}
		return err
	}
	e.runs.mu.Lock()
	e.runs.addShim(c.ID, client)
	recorded := e.runs.recorded[c.ID]
	pending := e.runs.pending[c.ID]
	delete(e.runs.pending, c.ID)
	e.runs.mu.Unlock()
	for _, p := range pending {
		a, err := client.Attach(context.WithoutCancel(ctx), p.opts)
		if err == nil {
			e.runs.addAttached(c.ID, a)
		}
		p.done <- attachResult{a: a, err: err, recorded: recorded}
	}
	endRun := e.phase("start/run", c.ID)
	err = client.Start(ctx)
	endRun()
	release()
	if err != nil {
		client.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		e.detachNetwork(context.WithoutCancel(ctx), c.ID, "")
		e.releaseHeld(c.ID)
		e.runs.endRecorded(c.ID, recorded)
		return err
	}
	startedAt := time.Now().UTC()
	probe := probeConfig(c)
	if err := e.containers.Update(ctx, c.ID, func(c *container.Container) error {
		if err := c.State.SetRunning(client.Pid(), startedAt); err != nil {
			return err
		}
		c.ManuallyStopped = false
		if !byPolicy {
			c.RestartCount = 0
		}
		if probe != nil {
			c.State.Health = startingHealth(c.State.Health)
		}
		return nil
	}); err != nil {
		client.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		e.detachNetwork(context.WithoutCancel(ctx), c.ID, "")
		e.releaseHeld(c.ID)
		e.runs.endRecorded(c.ID, recorded)
		return err
	}
	e.runEvents(c, true)
	e.containerEvent(c, eventtypes.ActionStart, nil)
	if probe != nil {
		// Before the monitor, whose stopHealth must come after it.
		e.startHealth(c, probe, startedAt)
	}
	e.monitors.Add(1)
	go e.monitor(c.ID, client)
	return nil
}

// startAge is the time a start waits at the gate since: a container never
// started has waited since its creation, when its docker run began (a
// slow create is not made up for by a long queue), any other since now.
// A container created long before its first start is served first, once.
func startAge(c *container.Container, now time.Time) time.Time {
	if c.State.StartedAt.IsZero() && c.Created.Before(now) {
		return c.Created
	}
	return now
}

// startShim mounts the rootfs, writes the bundle and spawns the shim with
// the container created but not started.
func (e *Engine) startShim(ctx context.Context, c *container.Container) (shimConn, error) {
	if err := createBindSources(c.HostConfig); err != nil {
		return nil, err
	}
	endMount := e.phase("start/mount", c.ID)
	rootfs, err := e.images.MountRootfs(ctx, c.Runtime.RootfsID)
	endMount()
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.images.UnmountRootfs(context.WithoutCancel(ctx), c.Runtime.RootfsID)
		}
	}()
	releaseVolumes, err := e.acquireVolumes(c)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			releaseVolumes()
		}
	}()
	links, linkEnv, err := e.legacyLinks(ctx, c)
	if err != nil {
		return nil, err
	}
	endNet := e.phase("start/network", c.ID)
	att, err := e.attachNetwork(ctx, c)
	endNet()
	if err != nil {
		return nil, err
	}
	if att.joined != "" {
		e.joins.add(att.joined, c.ID)
	}
	defer func() {
		if !ok {
			e.joins.remove(c.ID)
			e.detachNetwork(context.WithoutCancel(ctx), c.ID, sandboxID(att.Settings))
		}
	}()
	etc, err := e.writeEtcFiles(c, att, links)
	if err != nil {
		return nil, err
	}
	in := spec.Input{
		ID:         c.ID,
		Rootfs:     rootfs,
		Config:     c.Config,
		HostConfig: c.HostConfig,
		Hostname:   c.Config.Hostname,
		NetNSPath:  att.NetNSPath,
		EtcFiles:   etc,
		LinkEnv:    linkEnv,
		Volumes:    volumeDirs(c),
		Inherited:  inheritedMounts(c),
		Rootless:   e.opts.Rootless,
		SingleUID:  e.opts.IDMap == "single",
		InitPath:   e.opts.InitBinary,
	}
	e.seccomp.input(&in)
	if att.hostname != "" {
		in.Hostname = att.hostname
	}
	if mode := c.HostConfig.PidMode; mode.IsContainer() {
		if _, in.PidNSPath, err = e.sharedNamespace(ctx, c, "pid", mode.Container()); err != nil {
			return nil, err
		}
	}
	staged, err := e.stageMounts(ctx, c)
	if err != nil {
		return nil, err
	}
	// The runtime has bound them by the time the shim is created.
	defer staged.release()
	in.Subpaths, in.Images = staged.subpaths, staged.images
	releaseShm, err := e.ipcShare(ctx, c, &in)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			releaseShm()
		}
	}()
	sp, _, err := spec.Build(in)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Runtime.BundleDir, 0o700); err != nil {
		return nil, err
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(c.Runtime.BundleDir, wire.SpecFile), b, 0o600, false); err != nil {
		return nil, err
	}
	os.Remove(c.Runtime.ExitFile)
	rot, err := logRotation(c.HostConfig.LogConfig)
	if err != nil {
		return nil, err
	}
	defer e.phase("start/shim-create", c.ID)()
	client, err := e.shims.Create(ctx, shim.StartOptions{
		LogRotation:   rot,
		LogAttrs:      logAttrs(c),
		ID:            c.ID,
		BundleDir:     c.Runtime.BundleDir,
		StateDir:      filepath.Join(e.opts.StateDir, "runc"),
		SocketPath:    c.Runtime.ShimSocket,
		LogPath:       e.logFile(c),
		ExitFile:      c.Runtime.ExitFile,
		Tty:           c.Config.Tty,
		OpenStdin:     c.Config.OpenStdin,
		StdinOnce:     c.Config.StdinOnce,
		ShimBinary:    e.opts.ShimBinary,
		RuntimeBinary: e.opts.RuntimeBinary,
		RuntimeServer: e.runtimeServer(c),
		Debug:         e.opts.Debug,

		// The CLI sends the terminal's size at create: the tty has it
		// from the start (stty size in the first command).
		ConsoleHeight: uint16(c.HostConfig.ConsoleSize[0]),
		ConsoleWidth:  uint16(c.HostConfig.ConsoleSize[1]),
	})
	if err != nil {
		return nil, err
	}
	ok = true
	e.runs.mu.Lock()
	e.runs.held[c.ID] = func() { releaseShm(); releaseVolumes() }
	e.runs.mu.Unlock()
	return client, nil
}

// monitor waits for a container's end, records it, and cleans up: the
// rootfs is unmounted and an AutoRemove container removed.
func (e *Engine) monitor(id string, client shimConn) {
	defer e.monitors.Done()
	ctx := context.Background()
	e.runs.mu.Lock()
	recorded := e.runs.recorded[id]
	e.runs.mu.Unlock()
	// Also on the paths that give up: an attacher's wait must end.
	defer e.runs.endRecorded(id, recorded)
	st, err := client.Wait(ctx)
	exit := container.ExitInfo{Code: st.ExitCode, FinishedAt: st.FinishedAt, OOMKilled: st.OOMKilled, Error: st.Error}
	lost := err != nil
	if lost {
		exit = container.ExitInfo{Code: container.LostExitCode, Error: "waiting for the container: " + err.Error()}
	}
	e.runs.mu.Lock()
	delete(e.runs.shims, id)
	e.runs.mu.Unlock()
	e.runs.drainAttached(id, attachDrain)
	e.stopHealth(id)
	e.releaseHeld(id)
	c, err := e.containers.Get(ctx, id)
	if err != nil {
		e.log.Error("recording exit", "container", id, "err", err)
		return
	}
	if lost {
		if _, err := e.shims.Connect(ctx, c.Runtime.ShimSocket); errors.Is(err, shim.ErrNoShim) {
			e.deleteLost(ctx, c)
		}
	}
	endCleanup := e.phase("exit/cleanup", id)
	e.joins.remove(id)
	sb := sandboxID(c.NetworkSettings)
	e.releaseNetwork(ctx, id, sb)
	// One write records the exit, the network released, and for --rm the
	// removal that follows, unless a restart's start follows instead.
	stopped := e.restarts.takeStopped(id)
	autoRemove := c.HostConfig != nil && c.HostConfig.AutoRemove && !stopped.restart
	removing := false
	restart := false
	if err := e.containers.Update(ctx, id, func(r *container.Container) error {
		restart = !autoRemove && !r.State.Removing && !e.closing.Load() && !stopped.exitOnNext && r.HostConfig != nil &&
			shouldRestart(r.HostConfig.RestartPolicy, exit.Code, r.RestartCount, stopped.manual)
		r.ManuallyStopped = stopped.manual
		if restart {
			if err := r.State.SetRestarting(exit); err != nil {
				return err
			}
			r.RestartCount++
		} else if err := r.State.SetExited(exit); err != nil {
			return err
		}
		if ns := r.NetworkSettings; ns != nil && (sb == "" || ns.SandboxID == sb) {
			clearOperational(ns)
		}
		removing = autoRemove && r.State.SetRemoving(id, true) == nil
		return nil
	}); err != nil {
		e.log.Error("recording exit", "container", id, "err", err)
		return
	}
	e.containerEvent(c, eventtypes.ActionDie, map[string]string{"exitCode": strconv.Itoa(exit.Code)})
	e.runEvents(c, false)
	e.runs.endRecorded(id, recorded)
	// docker run --rm waits for the removal, whose rootfs is unmounted
	// with its reuse or deletion: no separate unmount on its path.
	if !autoRemove {
		if err := e.images.UnmountRootfs(ctx, c.Runtime.RootfsID); err != nil {
			e.log.Warn("unmounting rootfs", "container", id, "err", err)
		}
	}
	os.Remove(c.Runtime.ShimSocket)
	endCleanup()
	if restart {
		ran := exit.FinishedAt.Sub(c.State.StartedAt)
		e.restarts.schedule(id, e.restarts.nextDelay(id, ran), func() { e.restartByPolicy(id) })
	}
	if removing {
		if err := e.finishRemove(ctx, id, true); err != nil {
			e.log.Error("auto-remove", "container", id, "err", err)
		}
	}
}

func (e *Engine) failPending(id string, err error) {
	e.runs.mu.Lock()
	pending := e.runs.pending[id]
	delete(e.runs.pending, id)
	e.runs.mu.Unlock()
	for _, p := range pending {
		p.done <- attachResult{err: err}
	}
}

// WaitRequest is POST /containers/{id}/wait.
type WaitRequest struct {
	Condition string
}

// ContainerWait registers a waiter and returns the channel its result
// arrives on; registration is complete when it returns, so a start that
// follows cannot be missed.
func (e *Engine) ContainerWait(ctx context.Context, ref string, req WaitRequest) (<-chan container.WaitResult, error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return e.containers.Wait(ctx, c.ID, container.WaitCondition(req.Condition))
}

// runtimeServer is the socket of the runtime server for c's steps, or ""
// for the shim to start hutch-runtime itself: with the host's pid
// namespace, processes that c's processes leave behind are reparented
// to the nearest subreaper, which must be c's shim.
func (e *Engine) runtimeServer(c *container.Container) string {
	if e.rtServer == nil || c.HostConfig.PidMode.IsHost() {
		return ""
	}
	return e.rtServer.Socket()
}

// deleteLost has hutch-runtime kill and delete what c's shim, gone
// without an exit (killed with -9), left running: its init and their
// processes would run on unseen, and outlive the container's removal.
// containerd does the same for a dead shim's task.
func (e *Engine) deleteLost(ctx context.Context, c *container.Container) {
	if e.opts.RuntimeBinary == "" || c.Runtime.BundleDir == "" {
		return
	}
	if err := e.shims.Delete(ctx, e.opts.RuntimeBinary, c.Runtime.BundleDir); err != nil {
		e.log.Warn("killing a container whose shim died", "container", c.ID, "err", err)
	}
}
