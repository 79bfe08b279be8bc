//go:build integration

package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// waitCommand is a task's command: it runs until /tmp/stop exists, then
// exits with 3; SIGTERM ends it with 0.
const waitCommand = `trap "exit 0" TERM; while [ ! -f /tmp/stop ]; do sleep 0.2; done; exit 3`

// serviceTasks are `docker service ps` lines: "name desired current".
func serviceTasks(t *testing.T, d *daemon, svc string) []string {
	t.Helper()
	out, err := d.Docker(t, "service", "ps", "--no-trunc", "--format", "{{.Name}} {{.DesiredState}} {{.CurrentState}}", svc)
	if err != nil {
		t.Fatalf("docker service ps %s: %v\n%s", svc, err, out)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// runningContainers are the IDs of the service's running task containers.
func runningContainers(t *testing.T, d *daemon, svc string) []string {
	t.Helper()
	out, err := d.Docker(t, "ps", "-q", "--no-trunc", "--filter", "label=com.docker.swarm.service.name="+svc)
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	ids := strings.Fields(out)
	sort.Strings(ids)
	return ids
}

// waitTasks waits until the service has n running containers, none of
// them in old, and returns them.
func waitTasks(t *testing.T, d *daemon, svc string, n int, old ...string) []string {
	t.Helper()
	var ids []string
	eventually(t, 90*time.Second, func() string {
		ids = runningContainers(t, d, svc)
		if len(ids) != n {
			return fmt.Sprintf("service %s has %d running containers, want %d\n%s\n--- swarm log ---\n%s", svc, len(ids), n, strings.Join(serviceTasks(t, d, svc), "\n"), swarmLog(d))
		}
		for _, id := range ids {
			for _, o := range old {
				if id == o {
					return fmt.Sprintf("container %s is still running", id)
				}
			}
		}
		return ""
	})
	return ids
}

// A replicated service: create, ls, inspect, ps, the containers' names and
// labels, scale and rm.
func TestSwarmService(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	nodeID, _ := swarmInit(t, d)
	out, err := d.Docker(t, "service", "create", "-d", "--name", "web", "--replicas", "2", "--label", "tier=front", ref, "sh", "-c", waitCommand)
	if err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	svcID := strings.TrimSpace(out)
	ids := waitTasks(t, d, "web", 2)

	// The manager counts a task running once its node has reported it,
	// a moment after the container runs.
	want := svcID[:12] + " web replicated 2/2\n"
	waitFor(t, func() bool {
		out, err = d.Docker(t, "service", "ls", "--format", "{{.ID}} {{.Name}} {{.Mode}} {{.Replicas}}")
		if err == nil && out == want {
			return true
		}
		t.Logf("docker service ls: %v %q, want %q", err, out, want)
		return false
	})
	out, err = d.Docker(t, "service", "inspect", "web", "--format", "{{.ID}} {{.Spec.Name}} {{.Spec.Labels.tier}} {{.Spec.Mode.Replicated.Replicas}}")
	if want := svcID + " web front 2\n"; err != nil || out != want {
		t.Errorf("docker service inspect: %v\n%q, want %q", err, out, want)
	}
	out, err = d.Docker(t, "inspect", "--format", `{{.Name}} {{index .Config.Labels "com.docker.swarm.service.id"}} {{index .Config.Labels "com.docker.swarm.service.name"}} {{index .Config.Labels "com.docker.swarm.node.id"}} {{index .Config.Labels "com.docker.swarm.task.name"}}`, ids[0])
	f := strings.Fields(out)
	if err != nil || len(f) != 5 || f[1] != svcID || f[2] != "web" || f[3] != nodeID || "/"+f[4] != f[0] || !strings.HasPrefix(f[4], "web.") {
		t.Errorf("a task container's name and labels: %v %q", err, out)
	}
	out, err = d.Docker(t, "node", "ps", "--format", "{{.Name}} {{.CurrentState}}", "self")
	if err != nil || strings.Count(out, "web.") != 2 || strings.Count(out, "Running") != 2 {
		t.Errorf("docker node ps self: %v\n%s", err, out)
	}
	out, err = d.Docker(t, "service", "ps", "-q", "--filter", "desired-state=shutdown", "web")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("docker service ps --filter desired-state=shutdown: %v %q", err, out)
	}
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "web", ref, "true"); err == nil || !strings.Contains(out, "AlreadyExists") {
		t.Errorf("a second service named web: %v\n%s", err, out)
	}

	if out, err := d.Docker(t, "service", "scale", "-d", "web=3"); err != nil {
		t.Fatalf("docker service scale: %v\n%s", err, out)
	}
	waitTasks(t, d, "web", 3)
	if out, err := d.Docker(t, "service", "update", "-d", "--replicas", "1", "web"); err != nil {
		t.Fatalf("docker service update --replicas 1: %v\n%s", err, out)
	}
	waitTasks(t, d, "web", 1)

	if out, err := d.Docker(t, "service", "rm", "web"); err != nil {
		t.Fatalf("docker service rm: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, func() string {
		out, _ := d.Docker(t, "ps", "-aq", "--filter", "label=com.docker.swarm.service.name=web")
		if strings.TrimSpace(out) != "" {
			return "task containers remain after service rm: " + out
		}
		return ""
	})
	if out, err := d.Docker(t, "service", "inspect", "web"); err == nil || !strings.Contains(out, "no such service: web") {
		t.Errorf("docker service inspect after rm: %v\n%s", err, out)
	}
}

// The engine keeps a service in its configured state: a task container
// that is stopped, killed, removed or whose process exits is replaced
// by SwarmKit with a new task, and `service ps` shows the old one ended.
func TestSwarmServiceReplacement(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	out, err := d.Docker(t, "service", "create", "-d", "--name", "keep", "--replicas", "2", "--restart-delay", "1s", "--stop-grace-period", "2s", ref, "sh", "-c", waitCommand)
	if err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	ids := waitTasks(t, d, "keep", 2)
	ended := 0
	byState := map[string]int{}
	for _, tc := range []struct {
		name  string
		act   func(id string) (string, error)
		state string
	}{
		{"stop", func(id string) (string, error) { return d.Docker(t, "stop", id) }, "Complete"},
		{"kill", func(id string) (string, error) { return d.Docker(t, "kill", id) }, "Failed"},
		{"rm -f", func(id string) (string, error) { return d.Docker(t, "rm", "-f", id) }, "Failed"},
		{"exit", func(id string) (string, error) { return d.Docker(t, "exec", id, "touch", "/tmp/stop") }, "Failed"},
	} {
		victim := ids[0]
		if out, err := tc.act(victim); err != nil {
			t.Fatalf("%s %s: %v\n%s", tc.name, victim, err, out)
		}
		ids = waitTasks(t, d, "keep", 2, victim)
		ended++
		eventually(t, 30*time.Second, func() string {
			tasks := serviceTasks(t, d, "keep")
			running, shut := 0, 0
			states := map[string]int{}
			for _, l := range tasks {
				f := strings.Fields(l)
				if len(f) >= 3 && f[1] == "Running" && f[2] == "Running" {
					running++
				}
				if len(f) >= 3 && f[1] == "Shutdown" && (f[2] == "Complete" || f[2] == "Failed" || f[2] == "Shutdown") {
					shut++
					states[f[2]]++
				}
			}
			if running != 2 || shut != ended || states[tc.state] != byState[tc.state]+1 {
				return fmt.Sprintf("after %s: docker service ps shows %d running and %d ended tasks, want 2 and %d, one more %s:\n%s", tc.name, running, shut, ended, tc.state, strings.Join(tasks, "\n"))
			}
			byState = states
			return ""
		})
		if t.Failed() {
			return
		}
	}
}

// Restart conditions: with none, a task that exits is not replaced; with
// on-failure, one that exits 0 is not, one that fails is.
func TestSwarmServiceRestartCondition(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	for _, tc := range []struct {
		cond, cmd string
		replaced  bool
		state     string
	}{
		{"none", "exit 3", false, "Failed"},
		{"on-failure", "exit 0", false, "Complete"},
		{"on-failure", "exit 3", true, "Failed"},
	} {
		name := strings.ReplaceAll(tc.cond, "-", "") + strings.ReplaceAll(tc.cmd, " ", "")
		script := `while [ ! -f /tmp/stop ]; do sleep 0.2; done; ` + tc.cmd
		if out, err := d.Docker(t, "service", "create", "-d", "--name", name, "--restart-condition", tc.cond, "--restart-delay", "1s", ref, "sh", "-c", script); err != nil {
			t.Fatalf("docker service create: %v\n%s", err, out)
		}
		ids := waitTasks(t, d, name, 1)
		if out, err := d.Docker(t, "exec", ids[0], "touch", "/tmp/stop"); err != nil {
			t.Fatalf("docker exec: %v\n%s", err, out)
		}
		if tc.replaced {
			waitTasks(t, d, name, 1, ids[0])
		}
		eventually(t, 30*time.Second, func() string {
			tasks := serviceTasks(t, d, name)
			first := strings.Fields(tasks[len(tasks)-1])
			want := 1
			if tc.replaced {
				want = 2
			}
			if len(tasks) != want || len(first) < 3 || first[2] != tc.state {
				return fmt.Sprintf("restart-condition %s, %s: docker service ps:\n%s\nwant %d tasks, the first %s", tc.cond, tc.cmd, strings.Join(tasks, "\n"), want, tc.state)
			}
			return ""
		})
		if !tc.replaced {
			// Nothing comes back later either: the orchestrator has
			// decided (its restart delay is 1s).
			time.Sleep(3 * time.Second)
			if ids := runningContainers(t, d, name); len(ids) != 0 {
				t.Errorf("restart-condition %s, %s: %d containers run again", tc.cond, tc.cmd, len(ids))
			}
		}
	}
}
