package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/agent/exec"
	"github.com/moby/swarmkit/v2/api"
	"github.com/moby/swarmkit/v2/api/naming"
)

// Docker's labels on a task's container, which `docker ps --filter` and
// the tools around swarm read.
const (
	LabelNodeID      = "com.docker.swarm.node.id"
	LabelServiceID   = "com.docker.swarm.service.id"
	LabelServiceName = "com.docker.swarm.service.name"
	LabelTask        = "com.docker.swarm.task"
	LabelTaskID      = "com.docker.swarm.task.id"
	LabelTaskName    = "com.docker.swarm.task.name"
)

// defaultStopGrace is Docker's stop timeout for a task without
// StopGracePeriod.
const defaultStopGrace = 10 * time.Second

// controller runs one task's container.
type controller struct {
	e    *Executor
	name string

	mu   sync.Mutex
	task *api.Task
}

var (
	_ exec.Controller        = (*controller)(nil)
	_ exec.ContainerStatuser = (*controller)(nil)
	_ exec.PortStatuser      = (*controller)(nil)
	_ exec.ControllerLogs    = (*controller)(nil)
)

func newController(e *Executor, t *api.Task) *controller {
	return &controller{e: e, task: t.Copy(), name: naming.Task(t)}
}

func (c *controller) current() *api.Task {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.task
}

// Update takes the task's new record: its spec never changes, its desired
// state may.
func (c *controller) Update(_ context.Context, t *api.Task) error {
	c.mu.Lock()
	c.task = t.Copy()
	c.mu.Unlock()
	return nil
}

// Prepare pulls the image if the engine lacks it, writes the task's
// secret and config files, and creates the container.
func (c *controller) Prepare(ctx context.Context) error {
	if _, err := c.inspect(ctx); err == nil {
		return exec.ErrTaskPrepared
	} else if !cerrdefs.IsNotFound(err) {
		return err
	}
	t := c.current()
	spec := t.Spec.GetContainer()
	if err := c.ensureImage(ctx, spec); err != nil {
		return err
	}
	if err := c.ensureNetworks(ctx, t); err != nil {
		return err
	}
	files, err := c.writeFiles(t)
	if err != nil {
		return err
	}
	opts, err := createOptions(t, c.name, files)
	if err != nil {
		return exec.MakeTemporary(err)
	}
	if _, err := c.e.client.ContainerCreate(ctx, opts); err != nil {
		if cerrdefs.IsConflict(err) {
			return exec.ErrTaskPrepared
		}
		return fmt.Errorf("create container: %w", err)
	}
	return nil
}

// ensureImage pulls the task's image unless the engine has it, with the
// registry credentials the service was created with.
func (c *controller) ensureImage(ctx context.Context, spec *api.ContainerSpec) error {
	if _, err := c.e.client.ImageInspect(ctx, spec.Image); err == nil {
		return nil
	}
	var auth string
	if spec.PullOptions != nil {
		auth = spec.PullOptions.RegistryAuth
	}
	rc, err := c.e.client.ImagePull(ctx, spec.Image, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return fmt.Errorf("pull %s: %w", spec.Image, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error        string `json:"error"`
			ErrorMessage *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("pull %s: %w", spec.Image, err)
		}
		if m.Error != "" {
			return fmt.Errorf("pull %s: %s", spec.Image, m.Error)
		}
	}
}

// ensureNetworks makes, on this node, the bridge networks the task joins
// that it lacks: a service's networks are node-local (docs/swarm.md).
func (c *controller) ensureNetworks(ctx context.Context, t *api.Task) error {
	for _, n := range ParseNetworks(t.ServiceAnnotations.Labels[NetworksLabel]) {
		if _, err := c.e.client.NetworkInspect(ctx, n.Name, client.NetworkInspectOptions{}); err == nil {
			continue
		} else if !cerrdefs.IsNotFound(err) {
			return err
		}
		_, err := c.e.client.NetworkCreate(ctx, n.Name, client.NetworkCreateOptions{Driver: "bridge", Labels: map[string]string{SwarmScopeLabel: "swarm"}})
		if err != nil && !cerrdefs.IsConflict(err) {
			return fmt.Errorf("create network %s: %w", n.Name, err)
		}
	}
	return nil
}

// SwarmScopeLabel marks the engine networks made for a swarm (the engine
// makes them for overlay network creates; the executor for a service's
// networks this node lacks); leaving the swarm removes them.
const SwarmScopeLabel = "com.hutch.swarm.scope"

// Start starts the created container and, when it has a health check,
// holds the task in STARTING until the check passes.
func (c *controller) Start(ctx context.Context) error {
	st, err := c.inspect(ctx)
	if err != nil {
		return err
	}
	if st.State != nil && st.State.Status != container.StateCreated {
		return exec.ErrTaskStarted
	}
	if _, err := c.e.client.ContainerStart(ctx, c.name, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	if st.Config == nil || st.Config.Healthcheck == nil || len(st.Config.Healthcheck.Test) == 0 || st.Config.Healthcheck.Test[0] == "NONE" {
		return nil
	}
	return c.waitHealthy(ctx)
}

// errUnhealthy is Docker's task error for a container whose health check
// failed.
var errUnhealthy = errors.New("unhealthy container")

// waitHealthy polls the container's health until it is healthy or it ends.
func (c *controller) waitHealthy(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := c.inspect(ctx)
		if err != nil {
			return err
		}
		if st.State == nil || !st.State.Running {
			return c.exitStatus(ctx)
		}
		if h := st.State.Health; h != nil {
			switch h.Status {
			case container.Healthy:
				return nil
			case container.Unhealthy:
				return errUnhealthy
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Wait returns when the container is no longer running: nil for an exit
// of 0, an exec.ExitError otherwise. A container removed from under the
// task ends it too. SwarmKit then marks the task complete or failed, and
// the service's orchestrator starts a replacement as its restart policy
// says.
func (c *controller) Wait(ctx context.Context) error {
	st, err := c.inspect(ctx)
	if err != nil {
		return err
	}
	health := st.Config != nil && st.Config.Healthcheck != nil && len(st.Config.Healthcheck.Test) > 0 && st.Config.Healthcheck.Test[0] != "NONE"
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := c.e.client.ContainerWait(wctx, c.name, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var unhealthy <-chan struct{}
	if health {
		unhealthy = c.watchUnhealthy(wctx)
	}
	select {
	case r := <-res.Result:
		if r.StatusCode == 0 {
			return nil
		}
		return exitError(int(r.StatusCode))
	case err := <-res.Error:
		if cerrdefs.IsNotFound(err) {
			return errors.New("container removed")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("wait for container: %w", err)
	case <-unhealthy:
		return errUnhealthy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchUnhealthy closes its channel when the running container's health
// turns unhealthy: Docker fails such a task, and the orchestrator
// replaces it.
func (c *controller) watchUnhealthy(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			st, err := c.inspect(ctx)
			if err != nil {
				return
			}
			if st.State != nil && st.State.Health != nil && st.State.Health.Status == container.Unhealthy {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// exitErr is a container's non-zero exit; SwarmKit records its code in
// the task's status (exec.ExitCoder) and fails the task.
type exitErr int

func (e exitErr) Error() string { return fmt.Sprintf("task: non-zero exit (%d)", int(e)) }
func (e exitErr) ExitCode() int { return int(e) }

func exitError(code int) error { return exitErr(code) }

var _ exec.ExitCoder = exitErr(0)

// exitError is Wait's answer for a container that already stopped.
func (c *controller) exitStatus(ctx context.Context) error {
	st, err := c.inspect(ctx)
	if err != nil {
		return err
	}
	if st.State == nil || st.State.ExitCode == 0 {
		return errors.New("container exited during its health check")
	}
	return exitError(st.State.ExitCode)
}

// Shutdown stops the container with the service's stop signal and grace
// period.
func (c *controller) Shutdown(ctx context.Context) error {
	timeout := int(stopGrace(c.current()).Seconds())
	_, err := c.e.client.ContainerStop(ctx, c.name, client.ContainerStopOptions{Timeout: &timeout})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stop container: %w", err)
	}
	return nil
}

// Terminate kills the container at once.
func (c *controller) Terminate(ctx context.Context) error {
	_, err := c.e.client.ContainerKill(ctx, c.name, client.ContainerKillOptions{Signal: "KILL"})
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("kill container: %w", err)
	}
	return nil
}

// Remove stops and removes the container with its anonymous volumes, and
// the task's secret and config files.
func (c *controller) Remove(ctx context.Context) error {
	if err := c.Shutdown(ctx); err != nil {
		return err
	}
	_, err := c.e.client.ContainerRemove(ctx, c.name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) {
		return fmt.Errorf("remove container: %w", err)
	}
	c.removeFiles()
	return nil
}

func isRemovalInProgress(err error) bool {
	return err != nil && strings.Contains(err.Error(), "is already in progress")
}

// Close releases nothing: the controller holds no resources of its own.
func (c *controller) Close() error { return nil }

// ContainerStatus reports the container's ID, pid and exit code into the
// task's status.
func (c *controller) ContainerStatus(ctx context.Context) (*api.ContainerStatus, error) {
	st, err := c.inspect(ctx)
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := &api.ContainerStatus{ContainerID: st.ID}
	if st.State != nil {
		cs.PID = int32(st.State.Pid)
		cs.ExitCode = int32(st.State.ExitCode)
	}
	return cs, nil
}

// PortStatus reports the ports the container publishes on the node
// (mode=host), which `docker service ps` and inspect show.
func (c *controller) PortStatus(ctx context.Context) (*api.PortStatus, error) {
	st, err := c.inspect(ctx)
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return portStatus(st), nil
}

func (c *controller) inspect(ctx context.Context) (container.InspectResponse, error) {
	r, err := c.e.client.ContainerInspect(ctx, c.name, client.ContainerInspectOptions{})
	return r.Container, err
}

func stopGrace(t *api.Task) time.Duration {
	spec := t.Spec.GetContainer()
	if spec == nil || spec.StopGracePeriod == nil {
		return defaultStopGrace
	}
	return time.Duration(spec.StopGracePeriod.Seconds)*time.Second + time.Duration(spec.StopGracePeriod.Nanos)
}
