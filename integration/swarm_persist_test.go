//go:build integration

package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Ports publish on the node (mode=host); the ingress routing mesh, which
// needs overlay networks and IPVS, is refused with what to use instead,
// and nothing is created.
func TestSwarmServicePorts(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	_, port, _ := net.SplitHostPort(freeLoopbackAddr(t))
	out, err := d.Docker(t, "service", "create", "-d", "--name", "pub", "--publish", "mode=host,published="+port+",target=80", ref,
		"sh", "-c", "mkdir /www && echo hi > /www/index.html && exec httpd -f -p 80 -h /www")
	if err != nil {
		t.Fatalf("docker service create --publish mode=host: %v\n%s", err, out)
	}
	waitTasks(t, d, "pub", 1)
	eventually(t, 30*time.Second, func() string {
		resp, err := http.Get("http://127.0.0.1:" + port + "/")
		if err != nil {
			return fmt.Sprintf("GET the published port: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "hi\n" {
			return fmt.Sprintf("GET the published port: %s %q", resp.Status, b)
		}
		return ""
	})
	if p := serviceField(t, d, "pub", "{{range .Spec.EndpointSpec.Ports}}{{.PublishMode}} {{.PublishedPort}}->{{.TargetPort}}/{{.Protocol}}{{end}}"); p != "host "+port+"->80/tcp" {
		t.Errorf("the service's ports: %q", p)
	}
	out, err = d.Docker(t, "service", "ps", "--format", "{{.Ports}}", "pub")
	if err != nil || !strings.Contains(out, "*:"+port+"->80/tcp") {
		t.Errorf("docker service ps's ports: %v %q", err, out)
	}

	for _, args := range [][]string{
		{"service", "create", "-d", "--name", "mesh", "-p", "8080:80", ref, "sleep", "60"},
		{"service", "update", "-d", "--publish-add", "8081:80", "pub"},
	} {
		out, err := d.Docker(t, args...)
		if err == nil || !strings.Contains(out, "no ingress routing mesh: publish the port on the node with mode=host") {
			t.Errorf("docker %v: %v\n%s\nwant the ingress refusal", args, err, out)
		}
	}
	if out, err := d.Docker(t, "service", "ls", "--format", "{{.Name}}"); err != nil || out != "pub\n" {
		t.Errorf("services after the refusals: %v %q", err, out)
	}
	if p := serviceField(t, d, "pub", "{{len .Spec.EndpointSpec.Ports}}"); p != "1" {
		t.Errorf("the refused update changed the service's ports: %s", p)
	}
}

// The swarm's state is under the data root: after the engine restarts,
// from SIGTERM or kill -9, the node is back in its swarm, and its
// services and their tasks run.
func TestSwarmSurvivesRestart(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	nodeID, _ := swarmInit(t, d)
	out, err := d.Docker(t, "service", "create", "-d", "--name", "lasting", "--replicas", "2", ref, "sleep", "3600")
	if err != nil {
		t.Fatalf("docker service create: %v\n%s", err, out)
	}
	svcID := strings.TrimSpace(out)
	waitTasks(t, d, "lasting", 2)
	d.Stop()
	d2 := restarted(t, d)
	eventually(t, 60*time.Second, func() string {
		out, err := d2.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}} {{.Swarm.ControlAvailable}}")
		if want := "active " + nodeID + " true\n"; err != nil || out != want {
			return fmt.Sprintf("docker info after the restart: %v %q, want %q\n%s", err, out, want, swarmLog(d2))
		}
		return ""
	})
	if got := serviceField(t, d2, "lasting", "{{.ID}}"); got != svcID {
		t.Errorf("service after the restart: %q, want %q", got, svcID)
	}
	waitTasks(t, d2, "lasting", 2)
	eventually(t, 60*time.Second, func() string {
		out, _ := d2.Docker(t, "service", "ls", "--format", "{{.Replicas}}")
		if out != "2/2\n" {
			return "docker service ls after the restart: " + out
		}
		return ""
	})
	// And it goes on keeping the service's state.
	ids := runningContainers(t, d2, "lasting")
	if out, err := d2.Docker(t, "rm", "-f", ids[0]); err != nil {
		t.Fatalf("docker rm -f: %v\n%s", err, out)
	}
	waitTasks(t, d2, "lasting", 2, ids[0])

	// A kill -9 of the engine (hutch-swarm goes with it): the Raft log
	// on disk brings the swarm back all the same.
	killDaemons(t, d2)
	d3 := restarted(t, d2)
	eventually(t, 60*time.Second, func() string {
		out, _ := d3.Docker(t, "service", "ls", "--format", "{{.ID}} {{.Replicas}}")
		if out != svcID[:12]+" 2/2\n" {
			return fmt.Sprintf("docker service ls after kill -9 and restart: %q\n%s", out, swarmLog(d3))
		}
		return ""
	})
	waitTasks(t, d3, "lasting", 2)
}

// An autolocked swarm is locked after the engine restarts: swarm requests
// say so until `docker swarm unlock` is given the key; a wrong key is
// refused.
func TestSwarmAutolockRestart(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d := startDaemon(t)
	addr := freeLoopbackAddr(t)
	out, err := d.Docker(t, "swarm", "init", "--autolock", "--listen-addr", addr)
	if err != nil {
		t.Fatalf("docker swarm init --autolock: %v\n%s", err, out)
	}
	key, err := d.Docker(t, "swarm", "unlock-key", "-q")
	if err != nil || !strings.HasPrefix(key, "SWMKEY-1-") {
		t.Fatalf("docker swarm unlock-key: %v %q", err, key)
	}
	d.Stop()
	d2 := restarted(t, d)
	eventually(t, 60*time.Second, func() string {
		out, _ := d2.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}}")
		if out != "locked\n" {
			return fmt.Sprintf("docker info after the restart: %q\n%s", out, swarmLog(d2))
		}
		return ""
	})
	if out, err := d2.Docker(t, "service", "ls"); err == nil || !strings.Contains(out, "Swarm is encrypted and needs to be unlocked") {
		t.Errorf("docker service ls on a locked swarm: %v\n%s", err, out)
	}
	if out, err := dockerIn(t, d2, "SWMKEY-1-wrong\n", "swarm", "unlock"); err == nil || !strings.Contains(out, "invalid key") {
		t.Errorf("docker swarm unlock with a wrong key: %v\n%s", err, out)
	}
	if out, err := dockerIn(t, d2, key, "swarm", "unlock"); err != nil {
		t.Fatalf("docker swarm unlock: %v\n%s\n%s", err, out, swarmLog(d2))
	}
	if out, err := d2.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}"); err != nil || out != "active true\n" {
		t.Errorf("docker info after unlock: %v %q", err, out)
	}
}
