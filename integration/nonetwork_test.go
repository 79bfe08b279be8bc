//go:build integration

package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// TestWithoutSlirp4netns: on a machine where slirp4netns cannot run (here
// it is not installed; in unprivileged pods /dev/net/tun is missing) the
// daemon starts without networking, as it starts in single-UID mode
// without newuidmap, and says so in its log and /info. Containers run
// with loopback only, --network host is the host's network, a published
// port gets a create warning. Asked for by name, slirp4netns is an error
// with the fix.
func TestWithoutSlirp4netns(t *testing.T) {
	ref := busybox(t)
	env, rt, _ := daemonEnv(t)
	pathWithout(t, env, "slirp4netns")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := exec.CommandContext(ctx, hutchBin(t), "daemon", "--network=slirp4netns", "--host", "unix://"+filepath.Join(rt, "asked.sock"))
	asked.Env = env
	out, err := asked.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--network=slirp4netns: slirp4netns: not found on PATH") || !strings.Contains(string(out), "apt-get install slirp4netns") {
		t.Errorf("hutch daemon --network=slirp4netns without slirp4netns: %v\n%s", err, out)
	}

	d := startDaemonEnv(t, env, filepath.Join(rt, "hutch.sock"))
	if !strings.Contains(d.Log(), "networking disabled: slirp4netns cannot run here") {
		t.Errorf("no loud warning in the log:\n%s", d.Log())
	}
	if out, err := d.Docker(t, "info", "--format", "{{json .Warnings}}"); err != nil || !strings.Contains(out, "networking disabled") || !strings.Contains(out, "not found on PATH") {
		t.Errorf("/info Warnings: %v %s", err, out)
	}
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("pull: %v %s", err, out)
	}
	out2, err := d.Docker(t, "run", "--rm", ref, "ip", "-o", "link")
	if err != nil || !strings.Contains(out2, ": lo:") || strings.Count(strings.TrimSpace(out2), "\n") != 0 {
		t.Errorf("a default container's links: %v\n%s, want lo alone", err, out2)
	}
	out3, err := d.Docker(t, "run", "--rm", "--network", "host", ref, "ip", "-o", "link")
	if err != nil || strings.Count(strings.TrimSpace(out3), "\n") == 0 {
		t.Errorf("a --network host container's links: %v\n%s, want the host's", err, out3)
	}

	api := d.Client(t)
	created, err := api.ContainerCreate(context.Background(), client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}, ExposedPorts: network.PortSet{network.MustParsePort("80/tcp"): {}}},
		HostConfig: &containertypes.HostConfig{PortBindings: network.PortMap{
			network.MustParsePort("80/tcp"): {{HostPort: "8080"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(created.Warnings, "published ports are not reachable") {
		t.Errorf("create with -p: warnings %q", created.Warnings)
	}
	if out, err := d.Docker(t, "start", "-a", created.ID); err != nil {
		t.Errorf("start of the container with -p: %v %s", err, out)
	}
}
