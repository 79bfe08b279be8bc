//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// swarmInit makes d the one manager of a new swarm, listening on a free
// loopback port (tests run side by side; 2377 is not theirs to take).
func swarmInit(t *testing.T, d *daemon) (nodeID, addr string) {
	t.Helper()
	addr = freeLoopbackAddr(t)
	out, err := d.Docker(t, "swarm", "init", "--listen-addr", addr)
	if err != nil {
		t.Fatalf("docker swarm init: %v\n%s\n--- daemon log ---\n%s\n--- swarm log ---\n%s", err, out, d.Log(), swarmLog(d))
	}
	id, err := d.Docker(t, "info", "--format", "{{.Swarm.NodeID}}")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(id), addr
}

// swarmLog is hutch-swarm's log, for failures.
func swarmLog(d *daemon) string {
	b, _ := os.ReadFile(filepath.Join(d.Runtime, "hutch", "swarm", "swarm.log"))
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	return string(b)
}

// eventually retries f until it returns "" or limit passes (swarmkit
// converges in the background); the last complaint fails the test.
func eventually(t *testing.T, limit time.Duration, f func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// swarmProcs are the daemon's hutch-swarm processes.
func swarmProcs(t *testing.T, d *daemon) []int {
	var out []int
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) > 0 && filepath.Base(args[0]) == "hutch-swarm" {
			out = append(out, p)
		}
	}
	return out
}

// A single-node swarm: init, info, node ls/inspect, swarm inspect and
// update, unlock-key, and leave --force taking everything away. Outside
// the swarm, no hutch-swarm runs.
func TestSwarmInitLeave(t *testing.T) {
	d := startDaemon(t)
	if ps := swarmProcs(t, d); len(ps) != 0 {
		t.Errorf("hutch-swarm runs outside any swarm: %v", ps)
	}
	id, addr := swarmInit(t, d)
	if ps := swarmProcs(t, d); len(ps) != 1 {
		t.Errorf("after swarm init, %d hutch-swarm processes", len(ps))
	}
	if id == "" {
		t.Fatal("docker info shows no node ID after swarm init")
	}
	out, err := d.Docker(t, "info", "--format", "{{json .Swarm}}")
	if err != nil {
		t.Fatal(err)
	}
	var info swarm.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if info.LocalNodeState != swarm.LocalNodeStateActive || !info.ControlAvailable || info.Nodes != 1 || info.Managers != 1 || info.NodeAddr != "127.0.0.1" || info.Cluster == nil || info.Cluster.ID == "" {
		t.Errorf("docker info's swarm section: %+v", info)
	}
	if _, h, _ := d.rawRequest(t, "GET", "/_ping", ""); h.Get("Swarm") != "active/manager" {
		t.Errorf("/_ping's Swarm header in a swarm: %q", h.Get("Swarm"))
	}
	if out, err := d.Docker(t, "swarm", "init", "--listen-addr", freeLoopbackAddr(t)); err == nil || !strings.Contains(out, "This node is already part of a swarm") {
		t.Errorf("a second swarm init: %v\n%s", err, out)
	}
	out, err = d.Docker(t, "node", "ls", "--format", "{{.ID}} {{.Self}} {{.Status}} {{.Availability}} {{.ManagerStatus}}")
	if want := id + " true Ready Active Leader\n"; err != nil || out != want {
		t.Errorf("docker node ls: %v\n%q, want %q", err, out, want)
	}
	out, err = d.Docker(t, "node", "inspect", "self", "--format", "{{.ID}} {{.Spec.Role}} {{.ManagerStatus.Addr}}")
	if want := id + " manager " + addr + "\n"; err != nil || out != want {
		t.Errorf("docker node inspect self: %v\n%q, want %q", err, out, want)
	}
	if out, err := d.Docker(t, "node", "inspect", "nosuchnode"); err == nil || !strings.Contains(out, "node nosuchnode not found") {
		t.Errorf("docker node inspect of an unknown node: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "node", "update", "--label-add", "zone=a", "self"); err != nil {
		t.Errorf("docker node update: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "node", "inspect", "self", "--format", "{{.Spec.Labels.zone}}"); err != nil || out != "a\n" {
		t.Errorf("node label after update: %v %q", err, out)
	}

	// swarm update, inspect and the unlock key.
	if out, err := d.Docker(t, "swarm", "update", "--task-history-limit", "3"); err != nil {
		t.Errorf("docker swarm update: %v\n%s", err, out)
	}
	sw, err := d.Client(t).SwarmInspect(context.Background(), client.SwarmInspectOptions{})
	if err != nil || sw.Swarm.Spec.Orchestration.TaskHistoryRetentionLimit == nil || *sw.Swarm.Spec.Orchestration.TaskHistoryRetentionLimit != 3 || !strings.HasPrefix(sw.Swarm.JoinTokens.Worker, "SWMTKN-1-") || sw.Swarm.ID != info.Cluster.ID {
		t.Errorf("SwarmInspect: %+v, %v", sw.Swarm, err)
	}
	if out, err := d.Docker(t, "swarm", "join-token", "-q", "worker"); err != nil || !strings.HasPrefix(out, "SWMTKN-1-") {
		t.Errorf("docker swarm join-token: %v %q", err, out)
	}
	if out, err := d.Docker(t, "swarm", "unlock-key", "-q"); err == nil || !strings.Contains(out, "no unlock key is set") {
		t.Errorf("docker swarm unlock-key without autolock: %v %q", err, out)
	}
	if out, err := d.Docker(t, "swarm", "update", "--autolock"); err != nil || !strings.Contains(out, "SWMKEY-1-") {
		t.Errorf("docker swarm update --autolock: %v %q", err, out)
	}
	if out, err := d.Docker(t, "swarm", "unlock-key", "-q"); err != nil || !strings.HasPrefix(out, "SWMKEY-1-") {
		t.Errorf("docker swarm unlock-key: %v %q", err, out)
	}

	// Leave: refused for the last manager without --force.
	if out, err := d.Docker(t, "swarm", "leave"); err == nil || !strings.Contains(out, "Use `--force` to ignore this message") {
		t.Errorf("docker swarm leave without --force: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "swarm", "leave", "--force"); err != nil {
		t.Fatalf("docker swarm leave --force: %v\n%s", err, out)
	}
	if _, h, _ := d.rawRequest(t, "GET", "/_ping", ""); h.Get("Swarm") != "inactive" {
		t.Errorf("/_ping's Swarm header after leave: %q", h.Get("Swarm"))
	}
	if out, err := d.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}}"); err != nil || out != "inactive \n" {
		t.Errorf("docker info after leave: %v %q", err, out)
	}
	if out, err := d.Docker(t, "node", "ls"); err == nil || !strings.Contains(out, "This node is not a swarm manager") {
		t.Errorf("docker node ls after leave: %v\n%s", err, out)
	}
	if ps := swarmProcs(t, d); len(ps) != 0 {
		t.Errorf("hutch-swarm still runs after leave: %v", ps)
	}
	if _, err := os.Stat(filepath.Join(d.Data, "hutch", "swarm")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(d.Data, "hutch"))
		t.Errorf("the swarm's state is still on disk after leave: %v %v", err, entries)
	}
	// The port is free again: a new swarm can take it.
	if out, err := d.Docker(t, "swarm", "init", "--listen-addr", addr); err != nil {
		t.Errorf("swarm init after leave: %v\n%s", err, out)
	}
}
