package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func dualStackNetwork(name, subnet, subnet6 string) *enet.Network {
	n := testNetwork(name, subnet, false)
	p := netip.MustParsePrefix(subnet6)
	n.Subnet6, n.Gateway6 = p, p.Addr().Next()
	return n
}

// sysctl reads an IPv6 interface setting in the calling thread's
// namespace.
func sysctl(t *testing.T, iface, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + iface + "/" + key)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// globalV6 returns the global IPv6 addresses of a link, failing the test
// on one that is tentative (duplicate address detection still running).
// A link-local address is tentative for a moment after the link comes up
// even without DAD (the kernel clears the flag from its work queue), so
// that one is waited for; that DAD is off is the interface's accept_dad,
// which the tests check where it matters.
func globalV6(t *testing.T, name string) []string {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		pending := false
		for _, a := range addrs {
			tentative := a.Flags&unix.IFA_F_TENTATIVE != 0
			if !a.IP.IsLinkLocalUnicast() {
				if tentative {
					t.Errorf("%s: %s is tentative", name, a.IPNet)
				}
				out = append(out, a.IPNet.String())
			} else if tentative {
				pending = true
			}
		}
		if !pending {
			return out
		}
		if try == 300 {
			t.Errorf("%s: its link-local address stays tentative", name)
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// defaults lists the default routes of a family in the calling thread's
// namespace as "dev via gateway".
func defaults(t *testing.T, family int) []string {
	t.Helper()
	rs, err := netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		l, _ := netlink.LinkByIndex(r.LinkIndex)
		name := "?"
		if l != nil {
			name = l.Attrs().Name
		}
		out = append(out, name+" via "+r.Gw.String())
	}
	return out
}

func TestDriverIPv6(t *testing.T) {
	d, detached := newDriver(t)
	ctx := context.Background()
	n := dualStackNetwork("six", "172.31.0.0/24", "fd00:31::/64")
	if err := d.SetupNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	inNS(t, detached, func() error {
		if got := globalV6(t, n.Bridge); len(got) != 1 || got[0] != "fd00:31::1/64" {
			t.Errorf("bridge IPv6 addresses %v", got)
		}
		if got := countRules(t, n.ID); got != 4 {
			t.Errorf("%d rules, want 4", got)
		}
		return nil
	})
	plug := func(id string, ep *enet.Endpoint, net *enet.Network, r enet.Routes) string {
		t.Helper()
		path, err := d.NewSandbox(ctx, id)
		if err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		if err := d.Plug(ctx, path, net, ep, r); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mac := func(b byte) net.HardwareAddr { return net.HardwareAddr{2, 0x42, 0, 0, 0, b} }
	ep1 := &enet.Endpoint{ID: strings.Repeat("a1", 32), IP: netip.MustParseAddr("172.31.0.2"), IP6: netip.MustParseAddr("fd00:31::2"), MAC: mac(2), IfName: "eth0", HostIf: "vetha1a1a1a1"}
	ep2 := &enet.Endpoint{ID: strings.Repeat("a2", 32), IP: netip.MustParseAddr("172.31.0.3"), IP6: netip.MustParseAddr("fd00:31::3"), MAC: mac(3), IfName: "eth0", HostIf: "vetha2a2a2a2"}
	id1, id2 := strings.Repeat("c1", 32), strings.Repeat("c2", 32)
	path1 := plug(id1, ep1, n, enet.Routes{V4: true, V6: true})
	path2 := plug(id2, ep2, n, enet.Routes{V4: true, V6: true})
	defer d.RemoveSandbox(ctx, id1)
	defer d.RemoveSandbox(ctx, id2)

	// Inside: IPv6 on, no DAD, the address usable, the default routes.
	inNS(t, path1, func() error {
		if got := globalV6(t, "eth0"); len(got) != 1 || got[0] != "fd00:31::2/64" {
			t.Errorf("eth0 IPv6 addresses %v", got)
		}
		if ipv6Addrs(t, "eth0") != 2 { // the global one and the link-local
			t.Errorf("eth0 has not a link-local address beside the global one")
		}
		for key, want := range map[string]string{"accept_dad": "0", "disable_ipv6": "0"} {
			if got := sysctl(t, "eth0", key); got != want {
				t.Errorf("eth0 %s = %s, want %s", key, got, want)
			}
		}
		if got := sysctl(t, "all", "disable_ipv6"); got != "0" {
			t.Errorf("all.disable_ipv6 = %s", got)
		}
		if got := defaults(t, netlink.FAMILY_V6); len(got) != 1 || got[0] != "eth0 via fd00:31::1" {
			t.Errorf("IPv6 default routes %v", got)
		}
		if got := defaults(t, netlink.FAMILY_V4); len(got) != 1 || got[0] != "eth0 via 172.31.0.1" {
			t.Errorf("IPv4 default routes %v", got)
		}
		return nil
	})
	// The two containers talk over IPv6 at once, and reach their
	// gateway's DNS port there.
	var l net.Listener
	inNS(t, path1, func() error {
		var err error
		l, err = net.Listen("tcp6", "[fd00:31::2]:7000")
		return err
	})
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("hello over v6"))
			c.Close()
		}
	}()
	inNS(t, path2, func() error {
		c, err := net.DialTimeout("tcp6", "[fd00:31::2]:7000", 5*time.Second)
		if err != nil {
			return fmt.Errorf("container to container over IPv6: %w", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		k, err := c.Read(buf)
		if string(buf[:k]) != "hello over v6" {
			t.Errorf("read %q, %v", buf[:k], err)
		}
		return nil
	})
	pc, dl, err := d.ListenDNS(ctx, n.Gateway6)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	defer dl.Close()
	go func() {
		if c, err := dl.Accept(); err == nil {
			c.Close()
		}
	}()
	inNS(t, path2, func() error {
		c, err := net.DialTimeout("tcp", "[fd00:31::1]:53", 5*time.Second)
		if err != nil {
			return fmt.Errorf("container to its IPv6 gateway's DNS port: %w", err)
		}
		return c.Close()
	})

	// An IPv4-only network beside it keeps IPv6 off on its interface.
	n4 := testNetwork("four", "172.30.0.0/24", false)
	if err := d.SetupNetwork(ctx, n4); err != nil {
		t.Fatal(err)
	}
	ep3 := &enet.Endpoint{ID: strings.Repeat("a3", 32), IP: netip.MustParseAddr("172.30.0.2"), MAC: mac(4), IfName: "eth1", HostIf: "vetha3a3a3a3"}
	if err := d.Plug(ctx, path1, n4, ep3, enet.Routes{}); err != nil {
		t.Fatal(err)
	}
	// A second dual-stack network takes the routes (gw-priority), then
	// gives the IPv6 one up.
	nb := dualStackNetwork("bis", "172.29.0.0/24", "fd00:29::/64")
	if err := d.SetupNetwork(ctx, nb); err != nil {
		t.Fatal(err)
	}
	ep4 := &enet.Endpoint{ID: strings.Repeat("a4", 32), IP: netip.MustParseAddr("172.29.0.2"), IP6: netip.MustParseAddr("fd00:29::2"), MAC: mac(5), IfName: "eth2", HostIf: "vetha4a4a4a4"}
	if err := d.Plug(ctx, path1, nb, ep4, enet.Routes{V4: true, V6: true}); err != nil {
		t.Fatal(err)
	}
	inNS(t, path1, func() error {
		if got := ipv6Addrs(t, "eth1"); got != 0 {
			t.Errorf("%d IPv6 addresses on the IPv4-only network's eth1", got)
		}
		if got := defaults(t, netlink.FAMILY_V6); len(got) != 1 || got[0] != "eth2 via fd00:29::1" {
			t.Errorf("IPv6 default routes after a plug with them %v", got)
		}
		if got := defaults(t, netlink.FAMILY_V4); len(got) != 1 || got[0] != "eth2 via 172.29.0.1" {
			t.Errorf("IPv4 default routes after a plug with them %v", got)
		}
		return nil
	})
	if err := d.Reroute(ctx, path1, enet.Gateway{IfName: "eth1", Via: n4.Gateway}, enet.Gateway{}); err != nil {
		t.Fatal(err)
	}
	inNS(t, path1, func() error {
		if got := defaults(t, netlink.FAMILY_V6); len(got) != 0 {
			t.Errorf("IPv6 default routes after a reroute without one %v", got)
		}
		if got := defaults(t, netlink.FAMILY_V4); len(got) != 1 || got[0] != "eth1 via 172.30.0.1" {
			t.Errorf("IPv4 default routes after a reroute %v", got)
		}
		return nil
	})
	if err := d.Reroute(ctx, path1, enet.Gateway{IfName: "eth0", Via: n.Gateway}, enet.Gateway{IfName: "eth0", Via: n.Gateway6}); err != nil {
		t.Fatal(err)
	}
	inNS(t, path1, func() error {
		if got := defaults(t, netlink.FAMILY_V6); len(got) != 1 || got[0] != "eth0 via fd00:31::1" {
			t.Errorf("IPv6 default routes after a reroute back %v", got)
		}
		return nil
	})
}

// An IPv6-only network: the bridge has the IPv6 gateway alone, no
// masquerading rule, and its MAC from the IPv6 gateway.
func TestDriverIPv6Only(t *testing.T) {
	d, detached := newDriver(t)
	ctx := context.Background()
	id := strings.Repeat("6", 64)
	p := netip.MustParsePrefix("fd00:66::/64")
	n := &enet.Network{ID: id, Name: "six", Driver: "bridge", NoIPv4: true, Subnet6: p, Gateway6: p.Addr().Next(), Bridge: "br-" + id[:12]}
	if err := d.SetupNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	inNS(t, detached, func() error {
		br, err := netlink.LinkByName(n.Bridge)
		if err != nil {
			return err
		}
		if v4, _ := netlink.AddrList(br, netlink.FAMILY_V4); len(v4) != 0 {
			t.Errorf("IPv4 on an IPv6-only bridge: %v", v4)
		}
		if got := globalV6(t, n.Bridge); len(got) != 1 || got[0] != "fd00:66::1/64" {
			t.Errorf("bridge IPv6 addresses %v", got)
		}
		if got := br.Attrs().HardwareAddr.String(); got != "02:42:00:00:00:01" {
			t.Errorf("bridge MAC %s", got)
		}
		if got := countRules(t, id); got != 3 {
			t.Errorf("%d rules, want 3 (no masquerade)", got)
		}
		return nil
	})
	if err := d.TeardownNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// A namespace whose "all" has IPv6 off (a sysctl it inherited) gets it on
// for an IPv6 interface, and the IPv4-only interfaces keep it off.
func TestIPv6InsideAllDisabled(t *testing.T) {
	d, _ := newDriver(t)
	ctx := context.Background()
	n4 := testNetwork("four", "172.28.0.0/24", false)
	n6 := dualStackNetwork("six", "172.27.0.0/24", "fd00:27::/64")
	for _, n := range []*enet.Network{n4, n6} {
		if err := d.SetupNetwork(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	id := strings.Repeat("d1", 32)
	path, err := d.NewSandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer d.RemoveSandbox(ctx, id)
	ep4 := &enet.Endpoint{ID: strings.Repeat("b1", 32), IP: netip.MustParseAddr("172.28.0.2"), MAC: net.HardwareAddr{2, 0x42, 0, 0, 1, 2}, IfName: "eth0", HostIf: "vethb1b1b1b1"}
	if err := d.Plug(ctx, path, n4, ep4, enet.Routes{V4: true}); err != nil {
		t.Fatal(err)
	}
	inNS(t, path, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", []byte("1\n"), 0o644)
	})
	ep6 := &enet.Endpoint{ID: strings.Repeat("b2", 32), IP: netip.MustParseAddr("172.27.0.2"), IP6: netip.MustParseAddr("fd00:27::2"), MAC: net.HardwareAddr{2, 0x42, 0, 0, 1, 3}, IfName: "eth1", HostIf: "vethb2b2b2b2"}
	if err := d.Plug(ctx, path, n6, ep6, enet.Routes{V6: true}); err != nil {
		t.Fatal(err)
	}
	inNS(t, path, func() error {
		for iface, want := range map[string]string{"all": "0", "eth0": "1", "eth1": "0"} {
			if got := sysctl(t, iface, "disable_ipv6"); got != want {
				t.Errorf("%s.disable_ipv6 = %s, want %s", iface, got, want)
			}
		}
		if got := sysctl(t, "eth1", "accept_dad"); got != "0" {
			t.Errorf("eth1.accept_dad = %s, want 0", got)
		}
		if got := globalV6(t, "eth1"); len(got) != 1 || got[0] != "fd00:27::2/64" {
			t.Errorf("eth1 IPv6 addresses %v", got)
		}
		return nil
	})
}
