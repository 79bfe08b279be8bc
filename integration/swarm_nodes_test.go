//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Two engines of one user, each with its own data root and socket, make
// a swarm over loopback with SwarmKit's mutual TLS: a bad token is
// refused, a worker joins, tasks spread over both nodes, and when one
// node's engine is killed its tasks are rescheduled on the other. The
// killed engine, started again, rejoins and removes its stale tasks.
func TestSwarmTwoNodes(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d1, ref := pulled(t)
	d2, _ := pulled(t)
	_, addr1 := swarmInit(t, d1)
	out, err := d1.Docker(t, "swarm", "join-token", "-q", "worker")
	if err != nil {
		t.Fatalf("docker swarm join-token: %v\n%s", err, out)
	}
	token := strings.TrimSpace(out)

	// A token of the right form but another secret: refused, and the
	// node stays outside any swarm.
	i := strings.LastIndexByte(token, '-')
	bad := token[:i+1] + strings.Repeat("a", len(token)-i-1)
	out, err = d2.Docker(t, "swarm", "join", "--listen-addr", freeLoopbackAddr(t), "--token", bad, addr1)
	if err == nil || !strings.Contains(out, "valid join token is necessary") {
		t.Errorf("docker swarm join with a bad token: %v\n%s", err, out)
	}
	if out, err := d2.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}}"); err != nil || out != "inactive\n" {
		t.Errorf("after the refused join: %v %q", err, out)
	}
	if out, err := d2.Docker(t, "swarm", "join", "--token", "nonsense", addr1); err == nil || !strings.Contains(out, "invalid join token") {
		t.Errorf("docker swarm join with a malformed token: %v\n%s", err, out)
	}

	out, err = d2.Docker(t, "swarm", "join", "--listen-addr", freeLoopbackAddr(t), "--token", token, addr1)
	if err != nil || !strings.Contains(out, "This node joined a swarm as a worker") {
		t.Fatalf("docker swarm join: %v\n%s\n%s", err, out, swarmLog(d2))
	}
	if out, err := d2.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}"); err != nil || out != "active false\n" {
		t.Errorf("docker info on the worker: %v %q", err, out)
	}
	if _, h, _ := d2.rawRequest(t, "GET", "/_ping", ""); h.Get("Swarm") != "active/worker" {
		t.Errorf("/_ping's Swarm header on the worker: %q", h.Get("Swarm"))
	}
	if out, err := d2.Docker(t, "node", "ls"); err == nil || !strings.Contains(out, "Worker nodes can't be used to view or modify cluster state") {
		t.Errorf("docker node ls on the worker: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, func() string {
		out, _ := d1.Docker(t, "node", "ls", "--format", "{{.Status}} {{.ManagerStatus}}")
		if out != "Ready Leader\nReady \n" && out != "Ready \nReady Leader\n" {
			return "docker node ls: " + out
		}
		return ""
	})

	if out, err := d1.Docker(t, "service", "create", "-d", "--name", "spread", "--replicas", "4", "--restart-delay", "1s", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	if out, err := d1.Docker(t, "service", "create", "-d", "--name", "everywhere", "--mode", "global", ref, "sleep", "3600"); err != nil {
		t.Fatalf("docker service create --mode global: %v\n%s", err, out)
	}
	eventually(t, 90*time.Second, func() string {
		n1, n2 := len(runningContainers(t, d1, "spread")), len(runningContainers(t, d2, "spread"))
		g1, g2 := len(runningContainers(t, d1, "everywhere")), len(runningContainers(t, d2, "everywhere"))
		if n1+n2 != 4 || n1 == 0 || n2 == 0 || g1 != 1 || g2 != 1 {
			return fmt.Sprintf("tasks by node: spread %d+%d, global %d+%d\n%s", n1, n2, g1, g2, strings.Join(serviceTasks(t, d1, "spread"), "\n"))
		}
		return ""
	})

	killDaemons(t, d2)
	waitTasks(t, d1, "spread", 4)
	eventually(t, 30*time.Second, func() string {
		out, _ := d1.Docker(t, "node", "ls", "--format", "{{.Status}}")
		if !strings.Contains(out, "Down") {
			return "the killed node is not down: " + out
		}
		return ""
	})

	// Started again, the worker rejoins; its stale task containers go.
	d2b := restarted(t, d2)
	eventually(t, 90*time.Second, func() string {
		out, _ := d2b.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}}")
		n2 := len(runningContainers(t, d2b, "spread"))
		if out != "active\n" || n2 != 0 {
			return fmt.Sprintf("the restarted worker: %q, %d stale spread tasks running\n%s", out, n2, swarmLog(d2b))
		}
		return ""
	})
	if out, err := d2b.Docker(t, "swarm", "leave"); err != nil {
		t.Errorf("docker swarm leave on the worker: %v\n%s", err, out)
	}
	if ids := runningContainers(t, d2b, "everywhere"); len(ids) != 0 {
		t.Errorf("the worker left the swarm, and %d task containers remain", len(ids))
	}
}

// A second manager joins with the manager token: both see the cluster,
// the new one as reachable; it is demoted, and leaves.
func TestSwarmManagerJoin(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d1 := startDaemon(t)
	d2 := startDaemon(t)
	_, addr1 := swarmInit(t, d1)
	token, err := d1.Docker(t, "swarm", "join-token", "-q", "manager")
	if err != nil {
		t.Fatalf("docker swarm join-token manager: %v\n%s", err, token)
	}
	out, err := d2.Docker(t, "swarm", "join", "--listen-addr", freeLoopbackAddr(t), "--token", strings.TrimSpace(token), addr1)
	if err != nil || !strings.Contains(out, "This node joined a swarm as a manager") {
		t.Fatalf("docker swarm join as a manager: %v\n%s\n%s", err, out, swarmLog(d2))
	}
	id2, _ := d2.Docker(t, "info", "--format", "{{.Swarm.NodeID}}")
	id2 = strings.TrimSpace(id2)
	eventually(t, 30*time.Second, func() string {
		out, _ := d2.Docker(t, "node", "ls", "--format", "{{.ManagerStatus}}")
		if out != "Leader\nReachable\n" && out != "Reachable\nLeader\n" {
			return "docker node ls on the new manager: " + out
		}
		return ""
	})
	if out, err := d1.Docker(t, "node", "demote", id2); err != nil {
		t.Fatalf("docker node demote: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, func() string {
		out, _ := d2.Docker(t, "info", "--format", "{{.Swarm.ControlAvailable}}")
		if out != "false\n" {
			return "the demoted node still has the control API: " + out
		}
		return ""
	})
	if out, err := d2.Docker(t, "swarm", "leave"); err != nil {
		t.Fatalf("docker swarm leave: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, func() string {
		out, _ := d1.Docker(t, "node", "ls", "--format", "{{.ID}} {{.Status}}")
		if !strings.Contains(out, id2+" Down") {
			return "the node that left is not down: " + out
		}
		return ""
	})
	if out, err := d1.Docker(t, "node", "rm", id2); err != nil {
		t.Errorf("docker node rm: %v\n%s", err, out)
	}
	if out, _ := d1.Docker(t, "node", "ls", "-q"); strings.Contains(out, id2) {
		t.Errorf("the removed node is listed: %s", out)
	}
}
