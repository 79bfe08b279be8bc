package network

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"

	"github.com/miekg/dns"
)

// createNet makes a network from its IPAM configs (subnets, with
// "gw=" and "range=" suffixes split by spaces); v6 enables IPv6.
func createNet(t *testing.T, m *Manager, name string, v4, v6 bool, cfgs ...string) *netState {
	t.Helper()
	req := network.CreateRequest{Name: name, EnableIPv4: &v4, EnableIPv6: &v6, IPAM: &network.IPAM{}}
	for _, c := range cfgs {
		f := strings.Fields(c)
		ic := network.IPAMConfig{Subnet: netip.MustParsePrefix(f[0])}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "gw":
				ic.Gateway = netip.MustParseAddr(v)
			case "range":
				ic.IPRange = netip.MustParsePrefix(v)
			}
		}
		req.IPAM.Config = append(req.IPAM.Config, ic)
	}
	if _, err := m.NetworkCreate(context.Background(), req); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	n, _ := m.find(name)
	return n
}

// runOn configures and attaches a container on networks, the first its
// network mode, with their endpoint configs.
func runOn(t *testing.T, m *Manager, name string, nets []string, cfgs ...*network.EndpointSettings) (*container.Container, networking.Attachment) {
	t.Helper()
	c := testContainer(name, &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(nets[0])})
	eps := map[string]*network.EndpointSettings{}
	for i, n := range nets {
		var cfg *network.EndpointSettings
		if i < len(cfgs) {
			cfg = cfgs[i]
		}
		eps[n] = cfg
	}
	att := configureAndAttach(t, m, c, &network.NetworkingConfig{EndpointsConfig: eps})
	return c, att
}

func ip6(a string) *network.EndpointSettings {
	return &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv6Address: netip.MustParseAddr(a)}}
}

func TestDualStackNetwork(t *testing.T) {
	drv := newFake()
	root := t.TempDir()
	m, err := New(context.Background(), Options{Root: root, Driver: drv, EngineID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	createNet(t, m, "ds", true, true, "10.9.0.0/24", "fd00:9::/64 gw=fd00:9::fe range=fd00:9::100/120")

	c1, att1 := runOn(t, m, "one", []string{"ds"})
	ep := att1.Settings.Networks["ds"]
	if ep.IPAddress.String() != "10.9.0.2" || ep.IPPrefixLen != 24 || ep.Gateway.String() != "10.9.0.1" ||
		ep.GlobalIPv6Address.String() != "fd00:9::100" || ep.GlobalIPv6PrefixLen != 64 || ep.IPv6Gateway.String() != "fd00:9::fe" {
		t.Errorf("endpoint %+v", ep)
	}
	// /etc/hosts gets both, IPv4 first.
	if got := slices.Collect(func(yield func(string) bool) {
		for _, a := range att1.Addrs {
			yield(a.String())
		}
	}); !slices.Equal(got, []string{"10.9.0.2", "fd00:9::100"}) {
		t.Errorf("addresses %v", got)
	}
	// A static IPv6 address outside the range, inside the subnet.
	c2, att2 := runOn(t, m, "two", []string{"ds"}, ip6("fd00:9::5"))
	if got := att2.Settings.Networks["ds"].GlobalIPv6Address.String(); got != "fd00:9::5" {
		t.Errorf("--ip6: %s", got)
	}
	in, err := m.NetworkInspect(ctx, "ds")
	if err != nil {
		t.Fatal(err)
	}
	if !in.EnableIPv4 || !in.EnableIPv6 || len(in.IPAM.Config) != 2 || in.IPAM.Config[0].Subnet.String() != "10.9.0.0/24" ||
		in.IPAM.Config[1].Subnet.String() != "fd00:9::/64" || in.IPAM.Config[1].Gateway.String() != "fd00:9::fe" ||
		in.IPAM.Config[1].IPRange.String() != "fd00:9::100/120" {
		t.Errorf("inspect %+v", in.Network)
	}
	if r := in.Containers[c2.ID]; r.IPv4Address.String() != "10.9.0.3/24" || r.IPv6Address.String() != "fd00:9::5/64" {
		t.Errorf("inspect's container %+v", r)
	}
	// Static addresses that cannot be.
	for _, tt := range []struct {
		cfg  *network.EndpointSettings
		text string
	}{
		{ip6("fd00:8::5"), "no configured subnet or ip-range contain the IP address fd00:8::5"},
		{ip6("fd00:9::"), "no configured subnet or ip-range contain the IP address fd00:9::"},
		{ip6("fd00:9::fe"), "fd00:9::fe"},
		{ip6("::ffff:10.9.0.7"), "invalid IPv6 address"},
		{&network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: netip.MustParseAddr("fd00:9::7")}}, "invalid IPv4 address"},
	} {
		c := testContainer("bad", &containertypes.HostConfig{NetworkMode: "ds"})
		_, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"ds": tt.cfg}})
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%+v: %v, want invalid %q", tt.cfg.IPAMConfig, err, tt.text)
		}
	}
	// The address taken is refused to another.
	c3 := testContainer("three", &containertypes.HostConfig{NetworkMode: "ds"})
	ns, err := m.Configure(ctx, c3, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"ds": ip6("fd00:9::5")}})
	if err != nil {
		t.Fatal(err)
	}
	c3.NetworkSettings = ns
	if _, err := m.Attach(ctx, c3); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a taken --ip6: %v", err)
	}
	// The records survive a restart, and so do the running containers'
	// addresses (Restore).
	c1.NetworkSettings, c2.NetworkSettings = att1.Settings, att2.Settings
	c1.NetworkSettings.SandboxKey, c2.NetworkSettings.SandboxKey = att1.NetNSPath, att2.NetNSPath
	m2, err := New(ctx, Options{Root: root, Driver: drv, EngineID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if lost, err := m2.Restore(ctx, []*container.Container{c1, c2}); err != nil || len(lost) != 0 {
		t.Fatalf("restore: %v %v", lost, err)
	}
	n2, _ := m2.find("ds")
	if n2.Subnet6.String() != "fd00:9::/64" || n2.Gateway6.String() != "fd00:9::fe" || n2.IPRange6.String() != "fd00:9::100/120" {
		t.Errorf("after a restart: %+v", n2.Network)
	}
	if n2.pool6.used[netip.MustParseAddr("fd00:9::5")] != c2.ID || n2.eps[c1.ID].IP6.String() != "fd00:9::100" {
		t.Errorf("restored IPv6 addresses: %v", n2.pool6.used)
	}
	// Leaving gives both addresses back.
	for _, c := range []*container.Container{c1, c2} {
		if err := m2.Detach(ctx, c.ID, networking.DetachOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(n2.pool.used)+len(n2.pool6.used) != 0 {
		t.Errorf("addresses left: %v %v", n2.pool.used, n2.pool6.used)
	}
}

// Without a subnet, an IPv6 network takes the next /64 of the engine's ULA
// /48; with an IPv6 pool in default-address-pools, of that one.
func TestIPv6FromPools(t *testing.T) {
	m, err := New(context.Background(), Options{Root: t.TempDir(), Driver: newFake(), EngineID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ula := ULAPool("e1").Base
	a := createNet(t, m, "a", true, true)
	b := createNet(t, m, "b", true, true)
	if !ula.Contains(a.Subnet6.Addr()) || a.Subnet6.Bits() != 64 || a.Gateway6 != a.Subnet6.Addr().Next() || b.Subnet6.Overlaps(a.Subnet6) || !ula.Contains(b.Subnet6.Addr()) {
		t.Errorf("subnets %s, %s from %s", a.Subnet6, b.Subnet6, ula)
	}
	if !a.Subnet.IsValid() || a.Subnet == b.Subnet {
		t.Errorf("IPv4 subnets %s, %s", a.Subnet, b.Subnet)
	}
	// A given subnet may not overlap one taken.
	_, err = m.NetworkCreate(context.Background(), network.CreateRequest{Name: "c", EnableIPv6: ptr(true), IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.PrefixFrom(a.Subnet6.Addr(), 56).Masked()}}}})
	if !errors.Is(err, errdefs.ErrPermissionDenied) || !strings.Contains(err.Error(), "Pool overlaps") {
		t.Errorf("overlapping IPv6 subnet: %v", err)
	}
	if m.byName("c") != nil {
		t.Error("the refused network exists")
	}

	pools := []Pool{{netip.MustParsePrefix("10.50.0.0/16"), 24}, {netip.MustParsePrefix("fd77::/48"), 64}}
	m2, err := New(context.Background(), Options{Root: t.TempDir(), Driver: newFake(), Pools: pools, EngineID: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if n := createNet(t, m2, "p", true, true); n.Subnet6.String() != "fd77::/64" || n.Subnet.String() != "10.50.1.0/24" {
		t.Errorf("from the configured pools: %s %s", n.Subnet, n.Subnet6)
	}
}

func ptr[T any](v T) *T { return &v }

// An IPv6-only network: no IPv4 anywhere, the embedded DNS server on the
// IPv6 gateway.
func TestIPv6OnlyNetwork(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	n := createNet(t, m, "six", false, true, "fd00:6::/64")
	if n.Subnet.IsValid() || !n.NoIPv4 || n.pool != nil {
		t.Fatalf("IPv4 on an IPv6-only network: %+v", n.Network)
	}
	_, att := runOn(t, m, "web", []string{"six"})
	ep := att.Settings.Networks["six"]
	if ep.IPAddress.IsValid() || ep.Gateway.IsValid() || ep.IPPrefixLen != 0 || ep.GlobalIPv6Address.String() != "fd00:6::2" || ep.MacAddress.String() != "02:42:00:00:00:02" {
		t.Errorf("endpoint %+v", ep)
	}
	if !slices.Equal(att.Nameservers, []string{"fd00:6::1"}) || drv.dns[netip.MustParseAddr("fd00:6::1")] == "" {
		t.Errorf("nameservers %v, DNS listening on %v", att.Nameservers, drv.dns)
	}
	in, _ := m.NetworkInspect(context.Background(), "six")
	if in.EnableIPv4 || !in.EnableIPv6 || len(in.IPAM.Config) != 1 {
		t.Errorf("inspect %+v", in.Network)
	}
	if r := in.Containers[webID(m, "six")]; r.IPv4Address.IsValid() || r.IPv6Address.String() != "fd00:6::2/64" {
		t.Errorf("inspect's container %+v", r)
	}
	if _, att := runOn(t, m, "web2", []string{"six"}); drv.defaultRoutes(att.NetNSPath) != [2]string{"", "eth0 via fd00:6::1"} {
		t.Errorf("routes %v", drv.defaultRoutes(att.NetNSPath))
	}
}

// The embedded server answers AAAA with the IPv6 addresses of the names
// it knows, A with the IPv4 ones, and PTR of both; it knows its clients
// by either address.
func TestEmbeddedDNSIPv6(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	createNet(t, m, "ds", true, true, "10.9.0.0/24", "fd00:9::/64")
	createNet(t, m, "six", false, true, "fd00:6::/64")
	createNet(t, m, "four", true, false, "10.8.0.0/24")
	_, web := runOn(t, m, "web", []string{"ds"}, &network.EndpointSettings{Aliases: []string{"www"}})
	_, db := runOn(t, m, "db", []string{"six"})
	_, old := runOn(t, m, "old", []string{"four"})
	nDS, _ := m.find("ds")
	nSix, _ := m.find("six")
	nFour, _ := m.find("four")
	web6 := web.Addrs[1]
	ptr6, _ := dns.ReverseAddr(web6.String())
	tests := []struct {
		name   string
		n      *netState
		client netip.Addr
		qname  string
		qtype  uint16
		rcode  int
		want   []string
	}{
		{"AAAA", nDS, web.Addrs[0], "web.", dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00:9::2"}},
		{"AAAA of an alias, asked over IPv6", nDS, web6, "www.", dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00:9::2"}},
		{"A of the same", nDS, web6, "web.ds.", dns.TypeA, dns.RcodeSuccess, []string{"10.9.0.2"}},
		{"PTR of the IPv6 address", nDS, web6, ptr6, dns.TypePTR, dns.RcodeSuccess, []string{"web.ds."}},
		{"AAAA on an IPv6-only network", nSix, db.Addrs[0], "db.", dns.TypeAAAA, dns.RcodeSuccess, []string{"fd00:6::2"}},
		{"A of an IPv6-only name: none, but it exists", nSix, db.Addrs[0], "db.", dns.TypeA, dns.RcodeSuccess, nil},
		{"AAAA of an IPv4-only name: none, but it exists", nFour, old.Addrs[0], "old.", dns.TypeAAAA, dns.RcodeSuccess, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWriter{remote: &net.UDPAddr{IP: tt.client.AsSlice(), Port: 40000}}
			q := new(dns.Msg)
			q.SetQuestion(tt.qname, tt.qtype)
			m.newResolver(tt.n).ServeDNS(w, q)
			var got []string
			for _, rr := range w.msg.Answer {
				switch rr := rr.(type) {
				case *dns.A:
					got = append(got, rr.A.String())
				case *dns.AAAA:
					got = append(got, rr.AAAA.String())
				case *dns.PTR:
					got = append(got, rr.Ptr)
				}
			}
			if w.msg.Rcode != tt.rcode || !slices.Equal(got, tt.want) {
				t.Errorf("%s %s: %s %v, want %s %v", tt.qname, dns.TypeToString[tt.qtype], dns.RcodeToString[w.msg.Rcode], got, dns.RcodeToString[tt.rcode], tt.want)
			}
		})
	}
}

func TestArpaAddr(t *testing.T) {
	for _, s := range []string{"fd00:9::2", "2001:db8:ffff::abcd:1", "10.1.2.3", "::1"} {
		a := netip.MustParseAddr(s)
		name, _ := dns.ReverseAddr(s)
		if got, err := arpaAddr(strings.ToUpper(name)); err != nil || got != a {
			t.Errorf("arpaAddr(%s) = %v, %v; want %s", name, got, err, a)
		}
	}
	for _, bad := range []string{"1.0.ip6.arpa.", strings.Repeat("g.", 32) + "ip6.arpa.", strings.Repeat("10.", 32) + "ip6.arpa.", "example.com."} {
		if got, err := arpaAddr(bad); err == nil {
			t.Errorf("arpaAddr(%q) = %v", bad, got)
		}
	}
}

// The default routes follow Docker's rule: gw-priority, then networks
// that carry both families before those with one, then the name; each
// family through the first network that has it.
func TestGatewayPriority(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	ctx := context.Background()
	for i, name := range []string{"n1", "n2", "n3", "n4", "n5"} {
		d := string(rune('1' + i))
		createNet(t, m, name, true, true, "10.10"+d+".0.0/24", "fd0"+d+"::/64")
	}
	createNet(t, m, "a4", true, false, "10.200.0.0/24")
	createNet(t, m, "a6", false, true, "fd66::/64")
	createNet(t, m, "inner", true, true, "10.201.0.0/24", "fd67::/64")
	m.nets[mustFind(t, m, "inner").ID].Internal = true
	routes := func(path string) string {
		r := drv.defaultRoutes(path)
		return r[0] + " | " + r[1]
	}
	prio := func(p int) *network.EndpointSettings { return &network.EndpointSettings{GwPriority: p} }

	// At start: the highest priority, not the network mode's.
	_, att := runOn(t, m, "c1", []string{"n1", "n2"}, prio(10), prio(100))
	if got := routes(att.NetNSPath); got != "eth1 via 10.102.0.1 | eth1 via fd02::1" {
		t.Errorf("create with priority: %s", got)
	}
	// At equal priority: dual-stack before one family, then by name; the
	// families may go two ways.
	_, att = runOn(t, m, "c2", []string{"a4", "n3"})
	if got := routes(att.NetNSPath); got != "eth1 via 10.103.0.1 | eth1 via fd03::1" {
		t.Errorf("dual-stack first: %s", got)
	}
	_, att = runOn(t, m, "c3", []string{"a4", "a6"}, prio(0), prio(0))
	if got := routes(att.NetNSPath); got != "eth0 via 10.200.0.1 | eth1 via fd66::1" {
		t.Errorf("one family each: %s", got)
	}
	_, att = runOn(t, m, "c4", []string{"n5", "a4"}, prio(0), prio(5))
	if got := routes(att.NetNSPath); got != "eth1 via 10.200.0.1 | eth0 via fd05::1" {
		t.Errorf("priority over families: %s", got)
	}
	_, att = runOn(t, m, "c5", []string{"inner", "n4"}, prio(50), prio(-5))
	if got := routes(att.NetNSPath); got != "eth1 via 10.104.0.1 | eth1 via fd04::1" {
		t.Errorf("internal networks carry none: %s", got)
	}

	// Connect and disconnect, as Docker's TestConnectWithPriority.
	c, att := runOn(t, m, "c6", []string{"n1"})
	path := att.NetNSPath
	step := func(what, want string) {
		t.Helper()
		if got := routes(path); got != want {
			t.Errorf("%s: routes %s, want %s", what, got, want)
		}
	}
	step("alone", "eth0 via 10.101.0.1 | eth0 via fd01::1")
	connect := func(n string, p int) {
		t.Helper()
		if _, _, err := m.Connect(ctx, c, n, prio(p)); err != nil {
			t.Fatal(err)
		}
	}
	disconnect := func(n string) {
		t.Helper()
		if _, err := m.Disconnect(ctx, c, n, true); err != nil {
			t.Fatal(err)
		}
	}
	connect("n5", -100)
	step("a negative priority", "eth0 via 10.101.0.1 | eth0 via fd01::1")
	drv.failPlug = errors.New("no veth today")
	if _, _, err := m.Connect(ctx, c, "n3", prio(1000)); err == nil {
		t.Fatal("a failed plug connected")
	}
	drv.failPlug = nil
	step("a connect that failed", "eth0 via 10.101.0.1 | eth0 via fd01::1")
	connect("n2", 100)
	step("a higher priority", "eth2 via 10.102.0.1 | eth2 via fd02::1")
	connect("n3", 10)
	step("a lower priority", "eth2 via 10.102.0.1 | eth2 via fd02::1")
	connect("n4", 10)
	step("the same lower priority", "eth2 via 10.102.0.1 | eth2 via fd02::1")
	disconnect("n2")
	step("the gateway gone: the first name of the next priority", "eth3 via 10.103.0.1 | eth3 via fd03::1")
	disconnect("n3")
	step("and again", "eth4 via 10.104.0.1 | eth4 via fd04::1")
	disconnect("n5")
	step("a network that carried nothing", "eth4 via 10.104.0.1 | eth4 via fd04::1")
	disconnect("n4")
	step("back to the first", "eth0 via 10.101.0.1 | eth0 via fd01::1")
	disconnect("n1")
	step("none left", " | ")
}

func mustFind(t *testing.T, m *Manager, ref string) *netState {
	t.Helper()
	n, err := m.find(ref)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
