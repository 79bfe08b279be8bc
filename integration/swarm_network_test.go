//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// containerIP is a container's address on network net.
func containerIP(t *testing.T, d *daemon, id, net string) string {
	t.Helper()
	out, err := d.Docker(t, "inspect", "--format", "{{(index .NetworkSettings.Networks \""+net+"\").IPAddress}}", id)
	if err != nil {
		t.Fatalf("docker inspect %s: %v\n%s", id, err, out)
	}
	return strings.TrimSpace(out)
}

// resolves checks that, in container from, name resolves to exactly the
// addresses want (the embedded DNS answers a service's name with its
// tasks' addresses on the network: DNS round robin).
func resolves(t *testing.T, d *daemon, from, name string, want []string) string {
	out, err := d.Docker(t, "exec", from, "nslookup", name)
	if err != nil {
		return fmt.Sprintf("nslookup %s: %v\n%s", name, err, out)
	}
	var got []string
	after := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Name:") {
			after = true
		}
		if a, ok := strings.CutPrefix(l, "Address: "); ok && after {
			got = append(got, strings.TrimSpace(a))
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Sprintf("%s resolves to %v, want %v:\n%s", name, got, want, out)
	}
	return ""
}

// Services on a network of the engine's: each task joins it with the
// service's name as an alias, so the service's name resolves to its
// tasks (DNS round robin on one node). An unknown network is refused
// with nothing made.
func TestSwarmServiceNetworks(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	if out, err := d.Docker(t, "network", "create", "appnet"); err != nil {
		t.Fatalf("docker network create: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "service", "create", "-d", "--name", "bad", "--network", "nosuchnet", ref, "sleep", "60"); err == nil || !strings.Contains(out, "nosuchnet") {
		t.Errorf("a service on an unknown network: %v\n%s", err, out)
	}
	for _, svc := range []string{"db", "app"} {
		if out, err := d.Docker(t, "service", "create", "-d", "--name", svc, "--replicas", "2", "--network", "appnet", ref, "sleep", "3600"); err != nil {
			t.Fatalf("docker service create %s: %v\n%s", svc, err, out)
		}
	}
	dbs := waitTasks(t, d, "db", 2)
	apps := waitTasks(t, d, "app", 2)
	if out, _ := d.Docker(t, "service", "ls", "--format", "{{.Name}}"); strings.Contains(out, "bad") {
		t.Errorf("the refused service exists: %s", out)
	}
	want := []string{containerIP(t, d, dbs[0], "appnet"), containerIP(t, d, dbs[1], "appnet")}
	eventually(t, 20*time.Second, func() string { return resolves(t, d, apps[0], "db", want) })
	if out := serviceField(t, d, "db", "{{len .Spec.TaskTemplate.Networks}} {{len .Spec.Labels}}"); out != "1 0" {
		t.Errorf("the service's networks as inspect shows them: %q", out)
	}
	if out, err := d.Docker(t, "network", "rm", "appnet"); err == nil {
		t.Errorf("docker network rm of a network with tasks on it succeeded: %s", out)
	}
}

// docker stack deploy on a swarm of one node: the stack's overlay network
// becomes a bridge network of this engine, its services find each other
// by name, and stack ls/ps/services/rm work.
func TestSwarmStack(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	dir := t.TempDir()
	compose := fmt.Sprintf(`version: "3.8"
services:
  web:
    image: %s
    command: ["sleep", "3600"]
    deploy:
      replicas: 2
  db:
    image: %s
    command: ["sleep", "3600"]
`, ref, ref)
	if err := os.WriteFile(filepath.Join(dir, "compose.yml"), []byte(compose), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := d.Docker(t, "stack", "deploy", "-d", "-c", filepath.Join(dir, "compose.yml"), "st"); err != nil {
		t.Fatalf("docker stack deploy: %v\n%s\n%s", err, out, swarmLog(d))
	}
	if out, err := d.Docker(t, "network", "inspect", "--format", "{{.Driver}} {{index .Labels \"com.docker.stack.namespace\"}}", "st_default"); err != nil || out != "bridge st\n" {
		t.Errorf("the stack's network: %v %q", err, out)
	}
	webs := waitTasks(t, d, "st_web", 2)
	dbs := waitTasks(t, d, "st_db", 1)
	eventually(t, 20*time.Second, func() string {
		return resolves(t, d, webs[0], "db", []string{containerIP(t, d, dbs[0], "st_default")})
	})
	if out, err := d.Docker(t, "stack", "ls", "--format", "{{.Name}} {{.Services}}"); err != nil || out != "st 2\n" {
		t.Errorf("docker stack ls: %v %q", err, out)
	}
	if out, err := d.Docker(t, "stack", "services", "--format", "{{.Name}} {{.Replicas}}", "st"); err != nil || out != "st_db 1/1\nst_web 2/2\n" {
		t.Errorf("docker stack services: %v %q", err, out)
	}
	if out, err := d.Docker(t, "stack", "ps", "--format", "{{.Name}} {{.CurrentState}}", "st"); err != nil || strings.Count(out, "Running") != 3 {
		t.Errorf("docker stack ps: %v %q", err, out)
	}
	if out, err := d.Docker(t, "network", "rm", "st_default"); err == nil || !strings.Contains(out, "network st_default is in use by service st_") {
		t.Errorf("docker network rm of the stack's network in use: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "stack", "rm", "st"); err != nil {
		t.Errorf("docker stack rm: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, func() string {
		out, _ := d.Docker(t, "ps", "-aq", "--filter", "label=com.docker.stack.namespace=st")
		nets, _ := d.Docker(t, "network", "ls", "-q", "--filter", "name=st_default")
		if strings.TrimSpace(out+nets) != "" {
			return "after stack rm: containers " + out + " networks " + nets
		}
		return ""
	})
}
