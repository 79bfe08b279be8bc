//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// serviceField is one `docker service inspect --format` value.
func serviceField(t *testing.T, d *daemon, svc, format string) string {
	t.Helper()
	out, err := d.Docker(t, "service", "inspect", "--format", format, svc)
	if err != nil {
		t.Fatalf("docker service inspect %s: %v\n%s", svc, err, out)
	}
	return strings.TrimSpace(out)
}

// containerEnv is whether every running container of svc has kv in its
// environment.
func allHaveEnv(t *testing.T, d *daemon, svc, kv string) bool {
	for _, id := range runningContainers(t, d, svc) {
		out, err := d.Docker(t, "inspect", "--format", "{{json .Config.Env}}", id)
		if err != nil || !strings.Contains(out, `"`+kv+`"`) {
			return false
		}
	}
	return true
}

// Rolling updates are SwarmKit's: --env-add and --image replace the tasks
// one at a time; a failing update rolls back by itself with
// --update-failure-action rollback; `service rollback` returns to the
// previous spec.
func TestSwarmServiceUpdate(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	ref2 := strings.TrimSuffix(ref, ":latest") + ":v2"
	for _, args := range [][]string{{"tag", ref, ref2}, {"push", ref2}} {
		if out, err := d.Docker(t, args...); err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
	}
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "app", "--replicas", "2", "--env", "V=1",
		"--update-parallelism", "1", "--update-delay", "1s", "--stop-grace-period", "2s", ref, "sh", "-c", waitCommand); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	old := waitTasks(t, d, "app", 2)

	if out, err := d.Docker(t, "service", "update", "-d", "--env-add", "V=2", "app"); err != nil {
		t.Fatalf("docker service update --env-add: %v\n%s", err, out)
	}
	waitTasks(t, d, "app", 2, old...)
	eventually(t, 60*time.Second, func() string {
		if st := serviceField(t, d, "app", "{{.UpdateStatus.State}}"); st != "completed" || !allHaveEnv(t, d, "app", "V=2") {
			return "the update to V=2 did not complete: " + st
		}
		return ""
	})
	if p := serviceField(t, d, "app", "{{.Spec.UpdateConfig.Parallelism}} {{.Spec.UpdateConfig.Delay}}"); p != "1 1s" {
		t.Errorf("update config: %q", p)
	}

	old = runningContainers(t, d, "app")
	if out, err := d.Docker(t, "service", "update", "-d", "--image", ref2, "app"); err != nil {
		t.Fatalf("docker service update --image: %v\n%s", err, out)
	}
	ids := waitTasks(t, d, "app", 2, old...)
	for _, id := range ids {
		if out, err := d.Docker(t, "inspect", "--format", "{{.Config.Image}}", id); err != nil || !strings.HasPrefix(out, ref2) {
			t.Errorf("container %s runs %q (%v), want %s", id, out, err, ref2)
		}
	}
	eventually(t, 60*time.Second, func() string {
		if st := serviceField(t, d, "app", "{{.UpdateStatus.State}}"); st != "completed" {
			return "the image update did not complete: " + st
		}
		return ""
	})

	// docker service rollback: back to the spec before the image update.
	if out, err := d.Docker(t, "service", "rollback", "-d", "app"); err != nil {
		t.Fatalf("docker service rollback: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, func() string {
		img := serviceField(t, d, "app", "{{.Spec.TaskTemplate.ContainerSpec.Image}} {{.UpdateStatus.State}}")
		if !strings.HasPrefix(img, ref) || !strings.HasSuffix(img, "rollback_completed") {
			return "after service rollback: " + img
		}
		return ""
	})

	// A failing update (tasks that exit at once) rolls back by itself.
	if out, err := d.Docker(t, "service", "update", "-d", "--update-failure-action", "rollback", "--update-monitor", "3s",
		"--restart-delay", "1s", "--args", "sh -c 'exit 7'", "app"); err != nil {
		t.Fatalf("docker service update (failing): %v\n%s", err, out)
	}
	eventually(t, 120*time.Second, func() string {
		st := serviceField(t, d, "app", "{{.UpdateStatus.State}} {{json .Spec.TaskTemplate.ContainerSpec.Args}}")
		if !strings.HasPrefix(st, "rollback_completed") || !strings.Contains(st, "trap") {
			return fmt.Sprintf("a failing update did not roll back: %s\n%s", st, strings.Join(serviceTasks(t, d, "app"), "\n"))
		}
		return ""
	})
	waitTasks(t, d, "app", 2)
}

// docker service logs reads the tasks' logs through SwarmKit's log
// broker, each line led by its task's name and node.
func TestSwarmServiceLogs(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "talk", "--replicas", "2", ref,
		"sh", "-c", `echo "hello from $(hostname)"; echo oops >&2; exec sleep 3600`); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	waitTasks(t, d, "talk", 2)
	eventually(t, 30*time.Second, func() string {
		out, err := d.Docker(t, "service", "logs", "--no-trunc", "talk")
		if err != nil {
			return fmt.Sprintf("docker service logs: %v\n%s", err, out)
		}
		hello, oops := 0, 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			name, msg, ok := strings.Cut(l, "|")
			if !ok || !strings.HasPrefix(name, "talk.") || !strings.Contains(name, "@") {
				return "a line without its task: " + l
			}
			switch msg = strings.TrimSpace(msg); {
			case strings.HasPrefix(msg, "hello from "):
				hello++
			case msg == "oops":
				oops++
			}
		}
		if hello != 2 || oops != 2 {
			return "docker service logs:\n" + out
		}
		return ""
	})
	out, err := d.Docker(t, "service", "logs", "--raw", "--tail", "1", "talk")
	if err != nil || len(strings.Split(strings.TrimSpace(out), "\n")) != 2 {
		t.Errorf("docker service logs --raw --tail 1: %v\n%s", err, out)
	}
}

// Health-gated tasks: a task is running only once its health check
// passes, and one whose check fails is failed and replaced. Constraints
// hold tasks pending until a node matches.
func TestSwarmServiceHealthAndConstraints(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "sick", "--health-cmd", "false", "--health-interval", "500ms",
		"--health-retries", "1", "--restart-delay", "1s", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, func() string {
		out, err := d.Docker(t, "service", "ps", "--no-trunc", "--format", "{{.CurrentState}}|{{.Error}}", "sick")
		if err != nil || !strings.Contains(out, "Failed") || !strings.Contains(out, "unhealthy container") {
			return fmt.Sprintf("an unhealthy task is not failed: %v\n%s", err, out)
		}
		return ""
	})
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "well", "--health-cmd", "test -f /tmp/ok", "--health-interval", "500ms", "--health-retries", "30",
		ref, "sh", "-c", "sleep 2; touch /tmp/ok; exec sleep 3600"); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, func() string {
		out, _ := d.Docker(t, "service", "ps", "--format", "{{.CurrentState}}", "well")
		if !strings.HasPrefix(out, "Running") {
			return "a healthy task is not running: " + out
		}
		return ""
	})
	if ids := runningContainers(t, d, "well"); len(ids) == 1 {
		if out, _ := d.Docker(t, "inspect", "--format", "{{.State.Health.Status}}", ids[0]); out != "healthy\n" {
			t.Errorf("the running task's container is %q", out)
		}
	} else {
		t.Errorf("service well has %d running containers", len(ids))
	}

	if out, err := d.Docker(t, "service", "create", "-d", "--name", "placed", "--constraint", "node.labels.zone==b", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create --constraint: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, func() string {
		out, _ := d.Docker(t, "service", "ps", "--no-trunc", "--format", "{{.CurrentState}}|{{.Error}}", "placed")
		if !strings.HasPrefix(out, "Pending") || !strings.Contains(out, "no suitable node") {
			return "a task no node matches is not pending: " + out
		}
		return ""
	})
	if out, err := d.Docker(t, "node", "update", "--label-add", "zone=b", "self"); err != nil {
		t.Fatalf("docker node update: %v\n%s", err, out)
	}
	waitTasks(t, d, "placed", 1)
}

// A drained node runs no tasks: they are shut down and pending until the
// node is active again.
func TestSwarmNodeDrain(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "drained", "--replicas", "2", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	waitTasks(t, d, "drained", 2)
	if out, err := d.Docker(t, "node", "update", "--availability", "drain", "self"); err != nil {
		t.Fatalf("docker node update --availability drain: %v\n%s", err, out)
	}
	waitTasks(t, d, "drained", 0)
	if out, err := d.Docker(t, "node", "inspect", "--format", "{{.Spec.Availability}}", "self"); err != nil || out != "drain\n" {
		t.Errorf("node availability: %v %q", err, out)
	}
	if out, err := d.Docker(t, "node", "update", "--availability", "active", "self"); err != nil {
		t.Fatalf("docker node update --availability active: %v\n%s", err, out)
	}
	waitTasks(t, d, "drained", 2)
	if out, err := d.Docker(t, "node", "update", "--availability", "sleepy", "self"); err == nil {
		t.Errorf("a bad availability was taken: %s", out)
	}
}
