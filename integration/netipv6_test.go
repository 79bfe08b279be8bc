//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/network"
)

// inspectNet returns a network as docker network inspect shows it.
func inspectNet(t *testing.T, d *daemon, name string) network.Inspect {
	t.Helper()
	var out []network.Inspect
	if err := json.Unmarshal([]byte(dockerOK(t, d, "network", "inspect", name)), &out); err != nil || len(out) != 1 {
		t.Fatalf("network inspect %s: %v", name, err)
	}
	return out[0]
}

// ipamOf returns a network's IPAM config of a family.
func ipamOf(in network.Inspect, v6 bool) (network.IPAMConfig, bool) {
	for _, c := range in.IPAM.Config {
		if c.Subnet.Addr().Is6() == v6 {
			return c, true
		}
	}
	return network.IPAMConfig{}, false
}

// A dual-stack network: its IPv6 config in inspect, containers with IPv6
// addresses (allocated or --ip6) in theirs, reaching each other over
// IPv6 by address and by name (AAAA), /etc/hosts with the IPv6 line, the
// address usable from the container's first instruction, and a port
// published on an IPv6 host address reaching the container over IPv6.
func TestNetworkIPv6(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "10.77.0.0/24", "--subnet", "fd00:77::/64", "--ip-range", "fd00:77::100/120", "v6net")
	in := inspectNet(t, d, "v6net")
	c4, ok4 := ipamOf(in, false)
	c6, ok6 := ipamOf(in, true)
	if !in.EnableIPv6 || !in.EnableIPv4 || !ok4 || !ok6 || c4.Subnet.String() != "10.77.0.0/24" || c6.Subnet.String() != "fd00:77::/64" ||
		c6.Gateway.String() != "fd00:77::1" || c6.IPRange.String() != "fd00:77::100/120" {
		t.Fatalf("network inspect: EnableIPv6 %v, IPAM %+v", in.EnableIPv6, in.IPAM.Config)
	}

	v6Port := 0
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		v6Port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	runArgs := []string{"run", "-d", "--name", "web", "--network", "v6net"}
	if v6Port != 0 {
		runArgs = append(runArgs, "-p", fmt.Sprintf("[::1]:%d:80", v6Port))
	}
	dockerOK(t, d, append(runArgs, httpdArgs(ref, "six")...)...)
	dockerOK(t, d, "run", "-d", "--name", "fixed", "--hostname", "fixed", "--network", "v6net", "--ip6", "fd00:77::77", ref, "sleep", "300")

	webInsp := dockerOK(t, d, "inspect", "-f", "{{with .NetworkSettings.Networks.v6net}}{{.GlobalIPv6Address}} {{.GlobalIPv6PrefixLen}} {{.IPv6Gateway}} {{.IPAddress}}{{end}}", "web")
	f := strings.Fields(webInsp)
	if len(f) != 4 || !strings.HasPrefix(f[0], "fd00:77::1") || f[1] != "64" || f[2] != "fd00:77::1" || !strings.HasPrefix(f[3], "10.77.0.") {
		t.Fatalf("inspect web: %q", webInsp)
	}
	web6 := netip.MustParseAddr(f[0])
	if !c6.IPRange.Contains(web6) {
		t.Errorf("web's %s is outside the ip-range %s", web6, c6.IPRange)
	}
	if got := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.v6net.GlobalIPv6Address}}", "fixed"); got != "fd00:77::77" {
		t.Errorf("--ip6: %q", got)
	}
	in = inspectNet(t, d, "v6net")
	var six []string
	for _, r := range in.Containers {
		six = append(six, r.Name+" "+r.IPv6Address.String())
	}
	slices.Sort(six)
	if want := []string{"fixed fd00:77::77/64", "web " + web6.String() + "/64"}; !slices.Equal(six, want) {
		t.Errorf("network inspect's containers: %v, want %v", six, want)
	}
	hosts := dockerOK(t, d, "exec", "fixed", "cat", "/etc/hosts") + "\n"
	if !strings.Contains(hosts, "\nfd00:77::77\tfixed\n") || !strings.Contains(hosts, "\n10.77.0.") {
		t.Errorf("/etc/hosts of fixed:\n%s", hosts)
	}

	// From a new container, its first instructions: by address (ping, and
	// HTTP over IPv6), by name (ping -6 asks for AAAA), and the AAAA
	// answer itself. The address is not tentative: no DAD.
	script := "ip -6 addr show eth0; ping -6 -c1 -W 5 fd00:77::77 && wget -qO- 'http://[" + web6.String() + "]/' && ping -6 -c1 -W 5 fixed && nslookup -type=aaaa web"
	out, err := d.Docker(t, "run", "--rm", "--network", "v6net", ref, "sh", "-c", script)
	if err != nil || !strings.Contains(out, "inet6 fd00:77::") || strings.Contains(out, "tentative") || !strings.Contains(out, "six\n") ||
		!strings.Contains(out, "1 packets received") || !strings.Contains(out, web6.String()) {
		t.Errorf("over IPv6 from a new container: %v\n%s", err, out)
	}
	if strings.Count(out, "1 packets received") != 2 {
		t.Errorf("pings by address and by name:\n%s", out)
	}
	// Published on the host's ::1: forwarded to the container's IPv6
	// address.
	if v6Port != 0 {
		if body := getRetry(t, fmt.Sprintf("http://[::1]:%d/", v6Port)); strings.TrimSpace(body) != "six" {
			t.Errorf("port published on [::1]: %q", body)
		}
	}
	// IPv6 does not leave the detached namespace (slirp4netns has none):
	// the container is told so at once by an ICMPv6 unreachable, as on a
	// host without an IPv6 route, not left to time out.
	out, _ = d.Docker(t, "run", "--rm", "--network", "v6net", ref, "nc", "-w", "20", "2001:db8::1", "80")
	if !strings.Contains(out, "No route to host") && !strings.Contains(out, "unreachable") {
		t.Errorf("an outside IPv6 address: %q, want an unreachable error", out)
	}
	// A connect gives a running container its IPv6 address and line.
	dockerOK(t, d, "run", "-d", "--name", "late", "--hostname", "late", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "--ip6", "fd00:77::88", "v6net", "late")
	if hosts := dockerOK(t, d, "exec", "late", "cat", "/etc/hosts") + "\n"; !strings.Contains(hosts, "\nfd00:77::88\tlate\n") {
		t.Errorf("/etc/hosts after a connect:\n%s", hosts)
	}
	if out, err := d.Docker(t, "exec", "late", "ping", "-6", "-c1", "-W", "5", "fixed"); err != nil {
		t.Errorf("ping6 after a connect: %v\n%s", err, out)
	}
	dockerOK(t, d, "network", "disconnect", "v6net", "late")
	if hosts := dockerOK(t, d, "exec", "late", "cat", "/etc/hosts"); strings.Contains(hosts, "fd00:77::88") {
		t.Errorf("/etc/hosts after a disconnect:\n%s", hosts)
	}
	// The address went back to the pool: another container may have it.
	dockerOK(t, d, "run", "--rm", "--network", "v6net", "--ip6", "fd00:77::88", ref, "true")

	// An IPv6-only network: no IPv4 address, names over IPv6.
	dockerOK(t, d, "network", "create", "--ipv6", "--ipv4=false", "--subnet", "fd00:66::/64", "only6")
	in = inspectNet(t, d, "only6")
	if in.EnableIPv4 || !in.EnableIPv6 || len(in.IPAM.Config) != 1 {
		t.Errorf("IPv6-only network: EnableIPv4 %v EnableIPv6 %v IPAM %+v", in.EnableIPv4, in.EnableIPv6, in.IPAM.Config)
	}
	dockerOK(t, d, "run", "-d", "--name", "lone", "--network", "only6", ref, "sleep", "300")
	out, err = d.Docker(t, "run", "--rm", "--network", "only6", ref, "sh", "-c", "ip -4 addr show eth0; cat /etc/resolv.conf; ping -c1 -W 5 lone")
	if err != nil || strings.Contains(out, "inet ") || !strings.Contains(out, "nameserver fd00:66::1") || !strings.Contains(out, "1 packets received") {
		t.Errorf("on the IPv6-only network: %v\n%s", err, out)
	}

	dockerOK(t, d, "rm", "-f", "web", "fixed", "late", "lone")
	dockerOK(t, d, "network", "rm", "v6net", "only6")
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left: %v", v)
	}
}

// Bad IPv6 input gets Docker's status and message, and creates nothing;
// an IPv6 subnet without --ipv6 is ignored, as Docker ignores it.
func TestNetworkIPv6BadInput(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "fd00:79::/64", "taken")
	dockerOK(t, d, "network", "create", "four")
	state := func() string {
		return dockerOK(t, d, "network", "ls", "-q", "--no-trunc") + "\n" + dockerOK(t, d, "ps", "-aq", "--no-trunc")
	}
	before := state()
	tests := []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"subnet with host bits", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::1/64"}]}}`, 400, "invalid subnet fd00:78::1/64 : it should be fd00:78::/64"},
		{"gateway outside", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::/64","Gateway":"fd00:99::1"}]}}`, 400, "invalid gateway address fd00:99::1"},
		{"IPv4 gateway", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::/64","Gateway":"10.1.1.1"}]}}`, 400, "parent subnet is an IPv6 block"},
		{"range outside", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::/64","IPRange":"fd00:99::/80"}]}}`, 400, "invalid ip-range fd00:99::/80"},
		{"range bigger than the subnet", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::/64","IPRange":"fd00:78::/48"}]}}`, 400, "invalid ip-range"},
		{"no room", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:78::/127"}]}}`, 400, "no room"},
		{"overlap", "/networks/create", `{"Name":"x","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00:79::/48"}]}}`, 403, "Pool overlaps with other one on this address space"},
		{"neither family", "/networks/create", `{"Name":"x","EnableIPv4":false}`, 400, "IPv4 or IPv6 must be enabled"},
		{"bad option", "/networks/create", `{"Name":"x","Options":{"com.docker.network.enable_ipv6":"yes please"}}`, 400, `driver-opt "com.docker.network.enable_ipv6" is not a valid bool`},
		{"ip6 outside the subnet", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"taken"},"NetworkingConfig":{"EndpointsConfig":{"taken":{"IPAMConfig":{"IPv6Address":"fd00:99::5"}}}}}`, 400, "no configured subnet or ip-range contain the IP address fd00:99::5"},
		{"ip6 on an IPv4 network", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"four"},"NetworkingConfig":{"EndpointsConfig":{"four":{"IPAMConfig":{"IPv6Address":"fd00:79::5"}}}}}`, 400, "no configured subnet or ip-range contain the IP address fd00:79::5"},
		{"ip6 the gateway", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"taken"},"NetworkingConfig":{"EndpointsConfig":{"taken":{"IPAMConfig":{"IPv6Address":"fd00:79::1"}}}}}`, 400, "fd00:79::1"},
		{"ip6 not IPv6", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"taken"},"NetworkingConfig":{"EndpointsConfig":{"taken":{"IPAMConfig":{"IPv6Address":"10.1.1.1"}}}}}`, 400, "invalid IPv6 address: 10.1.1.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, resp := rawDo(t, d, "POST", "/v1.51"+tc.path, map[string]string{"Content-Type": "application/json"}, strings.NewReader(tc.body))
			var e struct{ Message string }
			json.Unmarshal([]byte(resp), &e)
			if code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("POST %s %s = %d %s, want %d containing %q", tc.path, tc.body, code, resp, tc.code, tc.msg)
			}
		})
	}
	if after := state(); after != before {
		t.Errorf("bad input changed the networks or containers:\n%s\nwant:\n%s", after, before)
	}
	// The CLI's words for the same.
	if out, err := d.Docker(t, "network", "create", "--ipv6", "--subnet", "fd00:78::/64", "--gateway", "fd00:78::", "x"); err == nil || !strings.Contains(out, "invalid gateway address fd00:78::") {
		t.Errorf("docker network create with a bad gateway: %v %s", err, out)
	}
	// A static IPv6 address already taken: refused at the start.
	dockerOK(t, d, "run", "-d", "--name", "holder", "--network", "taken", "--ip6", "fd00:79::9", ref, "sleep", "300")
	if out, err := d.Docker(t, "run", "--rm", "--network", "taken", "--ip6", "fd00:79::9", ref, "true"); err == nil || !strings.Contains(out, "Address already in use: fd00:79::9") {
		t.Errorf("a taken --ip6: %v %s", err, out)
	}
	// An IPv6 subnet without --ipv6: an IPv4 network, the subnet ignored.
	dockerOK(t, d, "network", "create", "--subnet", "fd00:7a::/64", "quiet")
	if in := inspectNet(t, d, "quiet"); in.EnableIPv6 || len(in.IPAM.Config) != 1 || !in.IPAM.Config[0].Subnet.Addr().Is4() {
		t.Errorf("an IPv6 subnet without --ipv6: EnableIPv6 %v IPAM %+v", in.EnableIPv6, in.IPAM.Config)
	}
	dockerOK(t, d, "rm", "-f", "holder")
	dockerOK(t, d, "network", "rm", "taken", "four", "quiet")
}

// --ipv6 without a subnet takes a /64 of a ULA /48 that is the engine's
// own, stable across restarts; the networks keep their IPv6 config over
// a restart, and their containers get IPv6 addresses again.
func TestNetworkIPv6Restart(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--ipv6", "ula1")
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "fd00:7b::/56", "--ip-range", "fd00:7b:0:5::/64", "--gateway", "fd00:7b::fe", "mine")
	ula1, ok := ipamOf(inspectNet(t, d, "ula1"), true)
	if !ok || ula1.Subnet.Bits() != 64 || !netip.MustParsePrefix("fd00::/8").Contains(ula1.Subnet.Addr()) || ula1.Gateway != ula1.Subnet.Addr().Next() {
		t.Fatalf("the default IPv6 subnet: %+v", ula1)
	}
	id := dockerOK(t, d, "info", "-f", "{{.ID}}")
	dockerOK(t, d, "run", "-d", "--name", "keep", "--stop-timeout", "1", "--network", "mine", ref, "sleep", "300")

	d.Stop()
	d2 := startDaemonEnv(t, d.env, d.Socket)
	if got := dockerOK(t, d2, "info", "-f", "{{.ID}}"); got != id {
		t.Fatalf("the engine ID changed over a restart: %s, was %s", got, id)
	}
	if got, _ := ipamOf(inspectNet(t, d2, "ula1"), true); got.Subnet != ula1.Subnet || got.Gateway != ula1.Gateway {
		t.Errorf("ula1 after a restart: %+v, was %+v", got, ula1)
	}
	in := inspectNet(t, d2, "mine")
	mine, _ := ipamOf(in, true)
	if !in.EnableIPv6 || mine.Subnet.String() != "fd00:7b::/56" || mine.Gateway.String() != "fd00:7b::fe" || mine.IPRange.String() != "fd00:7b:0:5::/64" {
		t.Errorf("mine after a restart: %v %+v", in.EnableIPv6, in.IPAM.Config)
	}
	// Another network after the restart: the same /48.
	dockerOK(t, d2, "network", "create", "--ipv6", "ula2")
	ula2, _ := ipamOf(inspectNet(t, d2, "ula2"), true)
	if ula2.Subnet == ula1.Subnet || netip.PrefixFrom(ula2.Subnet.Addr(), 48).Masked() != netip.PrefixFrom(ula1.Subnet.Addr(), 48).Masked() {
		t.Errorf("ula2 %s beside ula1 %s: want another /64 of the same /48", ula2.Subnet, ula1.Subnet)
	}
	dockerOK(t, d2, "start", "keep")
	addr := dockerOK(t, d2, "inspect", "-f", "{{.NetworkSettings.Networks.mine.GlobalIPv6Address}}", "keep")
	if a, err := netip.ParseAddr(addr); err != nil || !netip.MustParsePrefix("fd00:7b:0:5::/64").Contains(a) {
		t.Errorf("keep's IPv6 address after the restart: %q", addr)
	}
	if out, err := d2.Docker(t, "run", "--rm", "--network", "mine", ref, "ping", "-c1", "-W", "5", addr); err != nil {
		t.Errorf("ping keep after the restart: %v\n%s", err, out)
	}
	dockerOK(t, d2, "rm", "-f", "keep")
	dockerOK(t, d2, "network", "rm", "ula1", "ula2", "mine")
}

// The default routes of a container on several networks go through the
// network of highest gw-priority, IPv4 and IPv6 alike, at the start and
// when a connect or disconnect changes who is highest.
func TestNetworkGwPriority(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "10.81.0.0/24", "--subnet", "fd00:81::/64", "gwa")
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "10.82.0.0/24", "--subnet", "fd00:82::/64", "gwb")
	dockerOK(t, d, "network", "create", "--ipv6", "--subnet", "10.83.0.0/24", "--subnet", "fd00:83::/64", "gwc")
	routes := func(c string) string {
		out := dockerOK(t, d, "exec", c, "sh", "-c", "ip -4 route show default; ip -6 route show default")
		var keep []string
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) >= 5 && f[0] == "default" {
				keep = append(keep, f[2]+" "+f[4]) // via, dev
			}
		}
		return strings.Join(keep, ", ")
	}
	dockerOK(t, d, "run", "-d", "--name", "multi", "--network", "name=gwa,gw-priority=1", "--network", "name=gwb,gw-priority=100", ref, "sleep", "300")
	if got := routes("multi"); got != "10.82.0.1 eth1, fd00:82::1 eth1" {
		t.Errorf("at the start: %s", got)
	}
	if got := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.gwb.GwPriority}}", "multi"); got != "100" {
		t.Errorf("inspect's GwPriority %s", got)
	}
	dockerOK(t, d, "network", "connect", "--gw-priority", "200", "gwc", "multi")
	if got := routes("multi"); got != "10.83.0.1 eth2, fd00:83::1 eth2" {
		t.Errorf("after connecting a higher priority: %s", got)
	}
	dockerOK(t, d, "network", "disconnect", "gwc", "multi")
	if got := routes("multi"); got != "10.82.0.1 eth1, fd00:82::1 eth1" {
		t.Errorf("after disconnecting it: %s", got)
	}
	dockerOK(t, d, "network", "disconnect", "gwb", "multi")
	if got := routes("multi"); got != "10.81.0.1 eth0, fd00:81::1 eth0" {
		t.Errorf("after disconnecting the next: %s", got)
	}
	dockerOK(t, d, "rm", "-f", "multi")
	dockerOK(t, d, "network", "rm", "gwa", "gwb", "gwc")
}
