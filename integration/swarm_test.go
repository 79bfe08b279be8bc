//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// Outside any swarm, and with no plugins: the docker CLI and the SDK get
// the errors a Docker Engine outside any swarm, with no plugin installed,
// gives them, not "page not found".
func TestSwarmAndPluginsRefused(t *testing.T) {
	d := startDaemon(t)
	const notManager = `Error response from daemon: This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.`
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"node", "ls"}, notManager},
		{[]string{"service", "ls"}, notManager},
		{[]string{"secret", "ls"}, notManager},
		{[]string{"config", "ls"}, notManager},
		{[]string{"swarm", "leave"}, "Error response from daemon: This node is not part of a swarm"},
		{[]string{"swarm", "unlock-key"}, "could not fetch unlock key: " + notManager},
		// The CLI prints what it found (nothing) before the error, as for
		// every inspect.
		{[]string{"plugin", "inspect", "nosuch"}, "[]\n" + `Error response from daemon: plugin "nosuch" not found`},
		{[]string{"plugin", "install", "--grant-all-permissions", "vieux/sshfs"}, "Error response from daemon: hutch does not support plugins"},
	}
	for _, tc := range refused {
		out, err := d.Docker(t, tc.args...)
		if err == nil || strings.TrimSpace(out) != tc.want {
			t.Errorf("docker %s: %v\n%s\nwant a failure printing %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	out, err := d.Docker(t, "plugin", "ls")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "ID ") {
		t.Errorf("docker plugin ls: %v\n%s\nwant the header alone", err, out)
	}
	if out, err := d.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}"); err != nil || out != "inactive false\n" {
		t.Errorf("docker info's swarm state: %v %q", err, out)
	}

	ctx := context.Background()
	c := d.Client(t)
	if _, err := c.SwarmInspect(ctx, client.SwarmInspectOptions{}); !cerrdefs.IsUnavailable(err) {
		t.Errorf("SwarmInspect: %v, want an Unavailable error", err)
	}
	if _, err := c.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: "not an address"}); !cerrdefs.IsInvalidArgument(err) {
		t.Errorf("SwarmInit with a bad address: %v, want an InvalidArgument error", err)
	}
	if out, err := d.Docker(t, "info", "--format", "{{.Swarm.LocalNodeState}}"); err != nil || out != "inactive\n" {
		t.Errorf("after a refused init, docker info's swarm state: %v %q", err, out)
	}
	list, err := c.PluginList(ctx, client.PluginListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("PluginList = %+v, %v; want an empty list", list.Items, err)
	}
	if _, err := c.PluginInspect(ctx, "vieux/sshfs:latest", client.PluginInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("PluginInspect: %v, want a NotFound error", err)
	}
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil || info.Info.Swarm.LocalNodeState != swarm.LocalNodeStateInactive || info.Info.Swarm.ControlAvailable {
		t.Errorf("Info's swarm state: %+v, %v", info.Info.Swarm, err)
	}
}
