//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Interface sysctls come as the endpoint driver option
// com.docker.network.endpoint.sysctls and are set in the container as its
// interface is plugged; a --sysctl naming eth0 is moved there for API
// versions before 1.48 and refused from 1.48, as Docker does.
func TestInterfaceSysctls(t *testing.T) {
	d, ref := pulled(t)
	must(t, d, "network", "create", "sysnet")
	out := must(t, d, "run", "--rm", "--network", "name=sysnet,driver-opt=com.docker.network.endpoint.sysctls=net.ipv4.conf.IFNAME.log_martians=1", ref,
		"cat", "/proc/sys/net/ipv4/conf/eth0/log_martians")
	if out != "1" {
		t.Errorf("log_martians on eth0: %q", out)
	}
	if out, err := d.Docker(t, "run", "--rm", "--network", "sysnet", "--sysctl", "net.ipv4.conf.eth0.log_martians=1", ref, "true"); err == nil ||
		!strings.Contains(out, "must be supplied using driver option 'com.docker.network.endpoint.sysctls'") {
		t.Errorf("--sysctl naming eth0 at the CLI's API version: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "run", "--rm", "--network", "name=sysnet,driver-opt=com.docker.network.endpoint.sysctls=net.ipv4.conf.eth0.x=1", ref, "true"); err == nil ||
		!strings.Contains(out, "unrecognised network interface sysctl 'net.ipv4.conf.eth0.x=1'") {
		t.Errorf("a sysctl without IFNAME: %v\n%s", err, out)
	}
	// An older client's --sysctl for eth0 is moved to the endpoint.
	c, err := client.New(client.WithHost(d.Host()), client.WithAPIVersion("1.47"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"cat", "/proc/sys/net/ipv4/conf/eth0/log_martians"}},
		HostConfig: &containertypes.HostConfig{NetworkMode: "sysnet", Sysctls: map[string]string{"net.ipv4.conf.eth0.log_martians": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	must(t, d, "start", "-a", res.ID)
	if out := must(t, d, "logs", res.ID); out != "1" {
		t.Errorf("migrated log_martians: %q", out)
	}
}
