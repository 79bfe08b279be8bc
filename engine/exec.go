package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
	"github.com/hutch-engine/hutch/engine/spec"
)

// execRetention is how long an exec that ended stays inspectable. Docker
// keeps them about as long (its exec GC runs every five minutes), so a
// client can read the exit code well after the stream ended.
const execRetention = 5 * time.Minute

// lostExecCode is the exit code of an exec whose container stopped while
// it ran: the shim that knew its status is gone, and the kernel killed it
// (SIGKILL) with the container's pid namespace.
const lostExecCode = 137

// execStore keeps exec instances in memory, as Docker does: they do not
// survive the engine, and vanish with their container or a few minutes
// after they ended. The zero value is ready to use.
type execStore struct {
	mu sync.Mutex
	m  map[string]*execRecord
}

// execRecord is one exec instance. Its mutable fields are guarded by
// execStore.mu.
type execRecord struct {
	id          string
	containerID string
	cfg         containertypes.ExecCreateRequest
	// user and workingDir are the effective ones (the container's when
	// the request leaves them empty), as Docker's inspect shows them.
	user, workingDir string
	detachKeys       []byte
	// started is closed once the start attempt is over (resize waits for
	// it).
	started     chan struct{}
	startedOnce sync.Once

	// run is the shim of the container run the exec belongs to.
	run        shimConn
	startAsked bool
	running    bool
	pid        int
	exitCode   *int
	endedAt    time.Time
}

func (r *execRecord) markStarted() { r.startedOnce.Do(func() { close(r.started) }) }

// end records the exit code; the caller holds execStore.mu.
func (r *execRecord) end(code int) {
	if r.exitCode == nil {
		r.exitCode = &code
	}
	r.running = false
	if r.endedAt.IsZero() {
		r.endedAt = time.Now()
	}
}

func errNoExec(id string) error {
	return errdefs.ErrNotFound.WithMessage("No such exec instance: " + id)
}

func errNotRunning(id string) error {
	return errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", id))
}

// ExecCreate registers an exec instance in a running container (POST
// /containers/{id}/exec) and returns its id. The user is resolved now, so
// that an unknown one fails early, as in Docker.
func (e *Engine) ExecCreate(ctx context.Context, ref string, req containertypes.ExecCreateRequest) (string, error) {
	if len(req.Cmd) == 0 {
		return "", errdefs.ErrInvalidArgument.WithMessage("No exec command specified")
	}
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return "", err
	}
	if err := c.State.CheckExec(c.ID); err != nil {
		return "", err
	}
	run := e.runs.client(c.ID)
	if run == nil {
		return "", errNotRunning(c.ID)
	}
	keys, err := parseDetachKeys(req.DetachKeys, "escape")
	if err != nil {
		return "", err
	}
	if wd := req.WorkingDir; wd != "" && !path.IsAbs(wd) {
		return "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("the working directory '%s' is invalid, it needs to be an absolute path", wd))
	}
	if req.User != "" {
		sp, err := readBundleSpec(c)
		if err != nil {
			return "", err
		}
		if _, err := e.execUser(sp, c, req.User); err != nil {
			return "", err
		}
	}
	rec := &execRecord{
		id:          container.NewID(),
		containerID: c.ID,
		cfg:         req,
		user:        req.User,
		workingDir:  req.WorkingDir,
		detachKeys:  keys,
		started:     make(chan struct{}),
		run:         run,
	}
	if rec.user == "" {
		rec.user = c.Config.User
	}
	if rec.workingDir == "" {
		rec.workingDir = c.Config.WorkingDir
	}
	e.pruneExecs(ctx)
	e.execs.mu.Lock()
	if e.execs.m == nil {
		e.execs.m = map[string]*execRecord{}
	}
	e.execs.m[rec.id] = rec
	e.execs.mu.Unlock()
	e.containerEvent(c, execAction(eventtypes.ActionExecCreate, req.Cmd), map[string]string{"execID": rec.id})
	return rec.id, nil
}

// pruneExecs forgets the execs of removed containers, and those that
// ended more than execRetention ago. An exec whose container run is over
// has ended, whatever it was doing.
func (e *Engine) pruneExecs(ctx context.Context) {
	e.execs.mu.Lock()
	defer e.execs.mu.Unlock()
	now := time.Now()
	gone := map[string]bool{}
	for id, r := range e.execs.m {
		g, seen := gone[r.containerID]
		if !seen {
			_, err := e.containers.Get(ctx, r.containerID)
			g = errdefs.IsNotFound(err)
			gone[r.containerID] = g
		}
		if g {
			delete(e.execs.m, id)
			continue
		}
		if r.exitCode == nil && e.runs.client(r.containerID) != r.run {
			r.end(lostExecCode)
		}
		if !r.endedAt.IsZero() && now.Sub(r.endedAt) > execRetention {
			delete(e.execs.m, id)
		}
	}
}

// lookupExec finds an exec whose container still exists.
func (e *Engine) lookupExec(ctx context.Context, id string) (*execRecord, *container.Container, error) {
	e.execs.mu.Lock()
	r := e.execs.m[id]
	e.execs.mu.Unlock()
	if r == nil {
		return nil, nil, errNoExec(id)
	}
	c, err := e.containers.Get(ctx, r.containerID)
	if errdefs.IsNotFound(err) {
		e.execs.mu.Lock()
		delete(e.execs.m, id)
		e.execs.mu.Unlock()
		return nil, nil, errNoExec(id)
	}
	return r, c, err
}

// runningExec finds an exec whose container runs, with that run's shim.
func (e *Engine) runningExec(ctx context.Context, id string) (*execRecord, *container.Container, shimConn, error) {
	r, c, err := e.lookupExec(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := c.State.CheckExec(c.ID); err != nil {
		return nil, nil, nil, err
	}
	client := e.runs.client(c.ID)
	if client == nil {
		return nil, nil, nil, errNotRunning(c.ID)
	}
	return r, c, client, nil
}

// ExecStartRequest is POST /exec/{id}/start.
type ExecStartRequest struct {
	// Detach starts the process without streams; ExecStart returns once
	// it runs.
	Detach bool
	// ConsoleSize is the tty's [height, width]; nil keeps the one given
	// at create.
	ConsoleSize *[2]uint
	// Ready, if set, is called once the exec may start (it exists, its
	// container runs, it was not started before). Errors before it are
	// the request's; errors after it concern the process, and Docker
	// reports them in the stream.
	Ready func()
}

// ExecStart runs an exec instance. Attached, it streams until the process
// has exited and its output ended (or the caller detached: cancelled ctx,
// stdin closed by the detach keys of a tty), and records the exit code
// for ExecInspect. A command that cannot run is errdefs.ErrInvalidArgument
// with exit code 126 or 127 recorded, as Docker's "OCI runtime exec
// failed".
func (e *Engine) ExecStart(ctx context.Context, id string, req ExecStartRequest, stdin io.Reader, stdout, stderr io.Writer) error {
	r, c, client, err := e.runningExec(ctx, id)
	if err != nil {
		return err
	}
	e.execs.mu.Lock()
	switch {
	case r.exitCode != nil:
		err = errdefs.ErrConflict.WithMessage(fmt.Sprintf("exec command %s has already run", id))
	case r.startAsked:
		err = errdefs.ErrConflict.WithMessage(fmt.Sprintf("exec command %s is already running", id))
	}
	r.startAsked = true
	r.run = client
	e.execs.mu.Unlock()
	if err != nil {
		return err
	}
	defer r.markStarted()
	if req.Ready != nil {
		req.Ready()
	}
	fail := func(code int, err error) error {
		e.execs.mu.Lock()
		r.end(code)
		e.execs.mu.Unlock()
		return err
	}
	p, err := e.execProcess(c, r, req.ConsoleSize)
	if err != nil {
		return fail(126, err)
	}
	ctx, detach := context.WithCancel(ctx)
	defer detach()
	opts := shim.ExecOptions{ID: id, Process: *p, Detach: req.Detach, Started: func(pid int) {
		e.execs.mu.Lock()
		r.pid, r.running = pid, true
		e.execs.mu.Unlock()
		r.markStarted()
		e.containerEvent(c, execAction(eventtypes.ActionExecStart, r.cfg.Cmd), map[string]string{"execID": id})
	}}
	if !req.Detach {
		if r.cfg.AttachStdin && stdin != nil {
			opts.Stdin = stdin
			if r.cfg.Tty {
				opts.Stdin = newEscapeReader(stdin, r.detachKeys, detach)
			}
		}
		if r.cfg.AttachStdout {
			opts.Stdout = stdout
		}
		if r.cfg.AttachStderr {
			opts.Stderr = stderr
		}
	}
	exit, err := client.Exec(ctx, opts)
	var se *wire.StartError
	switch {
	case errors.As(err, &se):
		return fail(se.ExitCode, errdefs.ErrInvalidArgument.WithMessage("OCI runtime exec failed: "+se.Msg))
	case err != nil && !r.hasStarted(&e.execs):
		return fail(126, err)
	case err != nil && ctx.Err() != nil:
		// Detached (or the caller went away): the process goes on, and
		// ExecInspect asks the shim how it ends.
		e.watchExec(c, r, client)
		return nil
	case errors.Is(err, shim.ErrNoShim):
		// The container ended under it, and the process with it.
		return fail(lostExecCode, nil)
	case err != nil:
		return err
	case !req.Detach:
		e.execs.mu.Lock()
		r.end(exit.ExitCode)
		e.execs.mu.Unlock()
		e.containerEvent(c, eventtypes.ActionExecDie, map[string]string{"execID": id, "exitCode": strconv.Itoa(exit.ExitCode)})
	default:
		e.watchExec(c, r, client)
	}
	return nil
}

// watchExec waits in the background for the end of an exec whose output
// no client follows (detached, or its client went away), records its exit
// code and sends exec_die: Docker sends it at the end of every exec. An
// exec that ends with its container was killed with it.
func (e *Engine) watchExec(c *container.Container, r *execRecord, client shimConn) {
	e.monitors.Add(1)
	go func() {
		defer e.monitors.Done()
		code := lostExecCode
		st, err := client.WaitExec(context.Background(), r.id)
		switch {
		case err == nil:
			code = st.ExitCode
		case !errors.Is(err, shim.ErrNoShim):
			e.log.Warn("waiting for the end of an exec", "container", c.ID, "exec", r.id, "err", err)
			return
		}
		e.execs.mu.Lock()
		r.end(code)
		code = *r.exitCode // an inspect may have recorded it first
		e.execs.mu.Unlock()
		e.containerEvent(c, eventtypes.ActionExecDie, map[string]string{"execID": r.id, "exitCode": strconv.Itoa(code)})
	}()
}

// execAction is Docker's exec_create and exec_start action: the command
// follows.
func execAction(a eventtypes.Action, cmd []string) eventtypes.Action {
	return eventtypes.Action(string(a) + ": " + strings.Join(cmd, " "))
}

func (r *execRecord) hasStarted(s *execStore) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.pid != 0
}

// ExecInspect answers GET /exec/{id}/json. A running exec's state comes
// from the shim, so detached execs report their exit too.
func (e *Engine) ExecInspect(ctx context.Context, id string) (containertypes.ExecInspectResponse, error) {
	r, _, err := e.lookupExec(ctx, id)
	if err != nil {
		return containertypes.ExecInspectResponse{}, err
	}
	if !e.refreshExec(ctx, r) {
		return containertypes.ExecInspectResponse{}, errNoExec(id)
	}
	e.execs.mu.Lock()
	defer e.execs.mu.Unlock()
	priv := r.cfg.Privileged
	resp := containertypes.ExecInspectResponse{
		ID:      r.id,
		Running: r.running,
		ProcessConfig: &containertypes.ExecProcessConfig{
			Tty:        r.cfg.Tty,
			Entrypoint: r.cfg.Cmd[0],
			Arguments:  append([]string{}, r.cfg.Cmd[1:]...),
			Privileged: &priv,
			User:       r.user,
		},
		OpenStdin:   r.cfg.AttachStdin,
		OpenStdout:  r.cfg.AttachStdout,
		OpenStderr:  r.cfg.AttachStderr,
		ContainerID: r.containerID,
		DetachKeys:  append([]byte{}, r.detachKeys...), // "" rather than null, as Docker
		Pid:         r.pid,
	}
	if r.exitCode != nil {
		code := *r.exitCode
		resp.ExitCode = &code
	}
	return resp, nil
}

// refreshExec asks the shim about an exec that was running when last seen.
// It reports false when the exec is forgotten: its container still runs,
// but the shim no longer knows it, as it forgets an exec ten minutes
// after its end (Docker's "No such exec instance" then too).
func (e *Engine) refreshExec(ctx context.Context, r *execRecord) bool {
	e.execs.mu.Lock()
	run, running := r.run, r.running
	e.execs.mu.Unlock()
	if !running {
		return true
	}
	current := e.runs.client(r.containerID)
	var st wire.ExecState
	var err error
	if current == run {
		st, err = run.ExecState(ctx, r.id)
	}
	e.execs.mu.Lock()
	defer e.execs.mu.Unlock()
	switch {
	case current == run && errdefs.IsNotFound(err):
		delete(e.execs.m, r.id)
		return false
	case current != run, errors.Is(err, shim.ErrNoShim):
		r.end(lostExecCode)
	case err == nil && !st.Running:
		r.end(st.ExitCode)
	}
	return true
}

// ExecResize sets the size of an exec's tty. Like Docker it waits (a
// little) for a start in progress, since clients resize right after they
// asked for the start.
func (e *Engine) ExecResize(ctx context.Context, id string, height, width uint16) error {
	r, _, client, err := e.runningExec(ctx, id)
	if err != nil {
		return err
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-r.started:
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errdefs.ErrUnavailable.WithMessage("timeout waiting for exec session ready")
	}
	if !r.hasStarted(&e.execs) {
		return errdefs.ErrInvalidArgument.WithMessage("exec process is not started")
	}
	return client.ResizeExec(ctx, id, height, width)
}

// readBundleSpec reads the OCI spec the container runs with: an exec
// process starts from the container's own (capabilities, rlimits,
// no-new-privileges, user) as in Docker.
func readBundleSpec(c *container.Container) (*specs.Spec, error) {
	b, err := os.ReadFile(filepath.Join(c.Runtime.BundleDir, wire.SpecFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNotRunning(c.ID)
		}
		return nil, err
	}
	var sp specs.Spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("the spec of container %s: %w", c.ID, err)
	}
	if sp.Process == nil || sp.Root == nil {
		return nil, fmt.Errorf("the spec of container %s has no process or root", c.ID)
	}
	return &sp, nil
}

func (e *Engine) execUser(sp *specs.Spec, c *container.Container, user string) (specs.User, error) {
	var groupAdd []string
	if c.HostConfig != nil {
		groupAdd = c.HostConfig.GroupAdd
	}
	return spec.ResolveUser(sp.Root.Path, user, groupAdd, e.opts.IDMap == "single")
}

// execProcess is the container's process with the exec's command, tty,
// environment, working directory and user, and every capability when
// privileged.
func (e *Engine) execProcess(c *container.Container, r *execRecord, size *[2]uint) (*specs.Process, error) {
	sp, err := readBundleSpec(c)
	if err != nil {
		return nil, err
	}
	p := *sp.Process
	p.Args = r.cfg.Cmd
	p.Terminal = r.cfg.Tty
	p.ConsoleSize = nil
	if size == nil {
		size = r.cfg.ConsoleSize
	}
	if p.Terminal && size != nil && size[0] > 0 && size[1] > 0 {
		p.ConsoleSize = &specs.Box{Height: size[0], Width: size[1]}
	}
	p.Env = execEnv(c.Config, sp.Process.Env, r.cfg)
	p.Cwd = r.workingDir
	if p.Cwd == "" {
		p.Cwd = "/"
	}
	if r.cfg.User != "" {
		u, err := e.execUser(sp, c, r.cfg.User)
		if err != nil {
			return nil, err
		}
		u.Umask = p.User.Umask
		p.User = u
	}
	caps := &specs.LinuxCapabilities{}
	if p.Capabilities != nil {
		caps.Bounding = p.Capabilities.Bounding
	}
	if r.cfg.Privileged {
		caps.Bounding = privilegedCaps()
	}
	if p.User.UID == 0 {
		// Root gets the whole set; another user keeps only the bounding
		// set, which execve leaves it anyway (no ambient capabilities).
		caps.Permitted, caps.Effective = caps.Bounding, caps.Bounding
	}
	p.Capabilities = caps
	return &p, nil
}

// execEnv is Docker's exec environment: PATH, HOSTNAME and (with a tty)
// TERM, then the container's variables, then the exec's; a name without
// "=" removes the variable.
func execEnv(cfg *containertypes.Config, initEnv []string, req containertypes.ExecCreateRequest) []string {
	hostname := cfg.Hostname
	for _, kv := range initEnv {
		if v, ok := strings.CutPrefix(kv, "HOSTNAME="); ok {
			hostname = v
		}
	}
	env := []string{"PATH=" + spec.DefaultPath, "HOSTNAME=" + hostname}
	if req.Tty {
		env = append(env, "TERM=xterm")
	}
	return spec.OverrideEnv(spec.OverrideEnv(env, cfg.Env), req.Env)
}
