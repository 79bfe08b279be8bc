//go:build integration

package integration

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// waitExit waits for container id's next exit and returns its code.
func waitExit(t *testing.T, c *client.Client, id string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNotRunning})
	select {
	case res := <-w.Result:
		return res.StatusCode
	case err := <-w.Error:
		t.Fatalf("wait for %s: %v", id, err)
	}
	return 0
}

// TestKillRightAfterStart sends SIGTERM as soon as the start returns, as
// Docker's own kill tests do: top as pid 1 dies of it only if it has its
// handler by then, so the start must return once the container's command
// runs, not while the init that execs it could still drop the signal.
func TestKillRightAfterStart(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for i := range 20 {
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"top"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerKill(ctx, created.ID, client.ContainerKillOptions{Signal: "SIGTERM"}); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, c, created.ID); code != 143 {
			t.Fatalf("run %d: exit code %d after SIGTERM, want 143", i, code)
		}
	}
}

// TestKillRightAfterStartRestartPolicy kills containers with restart
// policy always as soon as they start: a kill with the container's stop
// signal ends it for good, another signal leaves the policy to restart it,
// as Docker does.
func TestKillRightAfterStartRestartPolicy(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		stopSignal string
		restarted  bool
	}{{"TERM", false}, {"CONT", true}} {
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &containertypes.Config{Image: ref, Cmd: []string{"top"}, StopSignal: tc.stopSignal},
			HostConfig: &containertypes.HostConfig{RestartPolicy: containertypes.RestartPolicy{Name: containertypes.RestartPolicyAlways}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerKill(ctx, created.ID, client.ContainerKillOptions{Signal: "TERM"}); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, c, created.ID); code != 143 {
			t.Fatalf("stop signal %s: exit code %d after SIGTERM, want 143", tc.stopSignal, code)
		}
		// The policy restarts the container or leaves it exited; either
		// shows in its restart count.
		if tc.restarted {
			waitRunning(t, c, created.ID)
			insp, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if insp.Container.RestartCount != 1 {
				t.Errorf("stop signal %s: restart count %d, want 1", tc.stopSignal, insp.Container.RestartCount)
			}
			timeout := 0
			if _, err := c.ContainerStop(ctx, created.ID, client.ContainerStopOptions{Timeout: &timeout}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		insp, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := insp.Container.State; st.Status != containertypes.StateExited || insp.Container.RestartCount != 0 {
			t.Errorf("stop signal %s: state %s, restart count %d; want exited, 0", tc.stopSignal, st.Status, insp.Container.RestartCount)
		}
	}
}

// waitRunning waits until container id runs.
func waitRunning(t *testing.T, c *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		insp, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if insp.Container.State.Running && !insp.Container.State.Restarting {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s did not run again", id)
}

// trapTERM is a command that says "received TERM" at a SIGTERM and goes
// on, so that only SIGKILL ends it.
var trapTERM = []string{"sh", "-c", "trap 'echo received TERM' TERM; echo ready; while true; do usleep 10000; done"}

// startTrapping runs trapTERM and waits until it has its trap.
func startTrapping(t *testing.T, d *daemon, ref string) string {
	t.Helper()
	c := d.Client(t)
	created, err := c.ContainerCreate(context.Background(), client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: trapTERM}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(context.Background(), created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLogs(t, d, created.ID, "ready", 1)
	return created.ID
}

// TestStopGoesOnWhenItsClientGoesAway cancels a stop once the container
// has its stop signal: the daemon still kills it at the end of the
// timeout, as Docker does.
func TestStopGoesOnWhenItsClientGoesAway(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	id := startTrapping(t, d, ref)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		timeout := 3
		_, err := c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &timeout})
		stopped <- err
	}()
	waitLogs(t, d, id, "received TERM", 1)
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled stop: %v", err)
	}
	if code := waitExit(t, c, id); code != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL at the end of the timeout)", code)
	}
}

// TestRestartGoesOnWhenItsClientGoesAway cancels a restart during its
// stop: the container is killed and started again, and the restart event
// says so, as on Docker.
func TestRestartGoesOnWhenItsClientGoesAway(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	id := startTrapping(t, d, ref)
	evctx, evcancel := context.WithCancel(context.Background())
	defer evcancel()
	ev := c.Events(evctx, client.EventsListOptions{Filters: make(client.Filters).Add("container", id).Add("event", string(eventtypes.ActionRestart))})
	ctx, cancel := context.WithCancel(context.Background())
	restarted := make(chan error, 1)
	go func() {
		timeout := 1
		_, err := c.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: &timeout})
		restarted <- err
	}()
	waitLogs(t, d, id, "received TERM", 1)
	cancel()
	if err := <-restarted; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled restart: %v", err)
	}
	select {
	case m := <-ev.Messages:
		if m.Action != eventtypes.ActionRestart || m.Actor.ID != id {
			t.Errorf("event %+v", m)
		}
	case err := <-ev.Err:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatalf("no restart event\n--- daemon log ---\n%s", d.Log())
	}
	insp, err := c.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !insp.Container.State.Running {
		t.Errorf("state after the restart: %+v", insp.Container.State)
	}
	// The new run has its own trap, and says ready again.
	waitLogs(t, d, id, "ready", 2)
	if _, err := c.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestRestartAutoRemove restarts --rm containers, as docker restart does:
// the restart's stop does not remove them, the stop or kill that follows
// does, as on Docker.
func TestRestartAutoRemove(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	noWait := 0
	for _, end := range []string{"kill", "stop"} {
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &containertypes.Config{Image: ref, Cmd: []string{"top"}},
			HostConfig: &containertypes.HostConfig{AutoRemove: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := created.ID
		if _, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := c.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: &noWait}); err != nil {
				t.Fatalf("restart: %v\n--- daemon log ---\n%s", err, d.Log())
			}
			insp, err := c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if err != nil {
				t.Fatalf("inspect after the restart: %v", err)
			}
			if st := insp.Container.State; !st.Running || st.Status != containertypes.StateRunning {
				t.Fatalf("state after the restart: %+v", st)
			}
		}
		wait := c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionRemoved})
		if end == "kill" {
			_, err = c.ContainerKill(ctx, id, client.ContainerKillOptions{})
		} else {
			_, err = c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &noWait})
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-wait.Result:
		case err := <-wait.Error:
			t.Fatalf("%s: wait for the removal: %v", end, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: not removed", end)
		}
		if _, err := c.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
			t.Errorf("%s: the container is still there", end)
		}
	}
}

// TestDetachedExecEvents starts execs detached, as Docker's
// TestEventsExecDie does: each is announced by exec_create and
// exec_start, and its end by exec_die with its exit code.
func TestDetachedExecEvents(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"top"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID
	if _, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := c.Events(ctx, client.EventsListOptions{Filters: make(client.Filters).Add("container", id)})
	for _, code := range []string{"0", "3"} {
		ex, err := c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", "exit " + code}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true}); err != nil {
			t.Fatal(err)
		}
		var seen []string
		for done := false; !done; {
			select {
			case m := <-ev.Messages:
				if m.Actor.Attributes["execID"] != ex.ID {
					continue
				}
				action, _, _ := strings.Cut(string(m.Action), ":")
				seen = append(seen, action)
				if m.Action == eventtypes.ActionExecDie {
					if got := m.Actor.Attributes["exitCode"]; got != code {
						t.Errorf("exec_die exitCode %q, want %q", got, code)
					}
					done = true
				}
			case err := <-ev.Err:
				t.Fatalf("events: %v (seen %v)", err, seen)
			}
		}
		if want := []string{"exec_create", "exec_start", "exec_die"}; !slices.Equal(seen, want) {
			t.Errorf("exec events %v, want %v", seen, want)
		}
		insp, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if insp.Running || strconv.Itoa(insp.ExitCode) != code {
			t.Errorf("exec inspect: running %v, exit code %d; want %s", insp.Running, insp.ExitCode, code)
		}
	}
}

// TestFailedExecExitCode runs execs whose command cannot run, as Docker's
// test of the same name does: one not found ends with 127, one that is no
// executable (a directory, a file without x) with 126, in the exec's
// inspect and as docker exec's exit code.
func TestFailedExecExitCode(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: "failexec", Config: &containertypes.Config{Image: ref, Cmd: []string{"top"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		code int
	}{{"nonexistent", 127}, {"/etc", 126}, {"/etc/passwd", 126}} {
		ex, err := c.ExecCreate(ctx, created.ID, client.ExecCreateOptions{Cmd: []string{tc.cmd}, AttachStdout: true, AttachStderr: true})
		if err != nil {
			t.Fatal(err)
		}
		att, err := c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(att.Reader)
		att.Close()
		insp, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if insp.ExitCode != tc.code {
			t.Errorf("exec %s: exit code %d, want %d (output %q)", tc.cmd, insp.ExitCode, tc.code, out)
		}
		out2, err := d.Docker(t, "exec", "failexec", tc.cmd)
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != tc.code {
			t.Errorf("docker exec %s: %v, want exit code %d\n%s", tc.cmd, err, tc.code, out2)
		}
		// A container's command is classed the same way.
		out2, err = d.Docker(t, "run", "--rm", ref, tc.cmd)
		if !errors.As(err, &xe) || xe.ExitCode() != tc.code {
			t.Errorf("docker run %s: %v, want exit code %d\n%s", tc.cmd, err, tc.code, out2)
		}
	}
}

// TestAttachEndsWithTheRecordedExit reads a container's output through
// an attach until it ends, as Docker's RunAttach helper does, then reads
// the exit code from inspect and removes the container's network: on
// Docker the run's end is recorded and its endpoint released by then.
func TestAttachEndsWithTheRecordedExit(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for i := range 5 {
		name := "attachnet" + strconv.Itoa(i)
		if _, err := c.NetworkCreate(ctx, name, client.NetworkCreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config:     &containertypes.Config{Image: ref, Cmd: []string{"sh", "-c", "echo hi; exit 3"}, AttachStdout: true, AttachStderr: true},
			HostConfig: &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(name)},
		})
		if err != nil {
			t.Fatal(err)
		}
		att, err := c.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(att.Reader)
		att.Close()
		if !strings.Contains(string(out), "hi") {
			t.Errorf("run %d: output %q", i, out)
		}
		insp, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := insp.Container.State; st.Status != containertypes.StateExited || st.ExitCode != 3 {
			t.Errorf("run %d: state %s, exit code %d once the output ended; want exited, 3", i, st.Status, st.ExitCode)
		}
		if _, err := c.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
}
