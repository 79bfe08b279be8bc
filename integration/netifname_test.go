//go:build integration

package integration

import (
	"strings"
	"testing"
)

// An endpoint's interface takes the name the endpoint driver option
// com.docker.network.endpoint.ifname gives it (Compose's
// interface_name), on the default bridge and on user networks; two
// endpoints cannot share one, and a name the kernel would refuse is
// refused.
func TestInterfaceName(t *testing.T) {
	d, ref := pulled(t)
	must(t, d, "network", "create", "front")
	must(t, d, "network", "create", "back")
	out := must(t, d, "run", "--rm", "--network", "name=front,driver-opt=com.docker.network.endpoint.ifname=foobar",
		"--network", "back", ref, "ip", "-o", "link", "show")
	if !strings.Contains(out, ": foobar@if") || !strings.Contains(out, ": eth0@if") {
		t.Errorf("interfaces:\n%s", out)
	}
	if out := must(t, d, "run", "--rm", "--network", "name=bridge,driver-opt=com.docker.network.endpoint.ifname=foobar", ref, "ip", "-o", "link", "show"); !strings.Contains(out, ": foobar@if") {
		t.Errorf("interfaces on the default bridge:\n%s", out)
	}
	if out, err := d.Docker(t, "run", "--rm", "--network", "name=front,driver-opt=com.docker.network.endpoint.ifname=eth0",
		"--network", "name=back,driver-opt=com.docker.network.endpoint.ifname=eth0", ref, "true"); err == nil || !strings.Contains(out, "interface name eth0 is already in use") {
		t.Errorf("two interfaces named eth0: %v\n%s", err, out)
	}
	if out, err := d.Docker(t, "run", "--rm", "--network", "name=back,driver-opt=com.docker.network.endpoint.ifname=much-too-long-name", ref, "true"); err == nil || !strings.Contains(out, "invalid interface name") {
		t.Errorf("a name longer than the kernel takes: %v\n%s", err, out)
	}
}
