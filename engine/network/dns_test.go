package network

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"

	"github.com/miekg/dns"
)

// fakeUpstream answers example.test. with 192.0.2.7 and everything else
// with NXDOMAIN.
func fakeUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		r := new(dns.Msg)
		r.SetReply(q)
		if q.Question[0].Name == "example.test." && q.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR("example.test. 60 IN A 192.0.2.7")
			r.Answer = append(r.Answer, rr)
		} else {
			r.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(r)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// attachOn starts a container on the user network net with aliases.
func attachOn(t *testing.T, m *Manager, name, net string, aliases ...string) netip.Addr {
	t.Helper()
	c := testContainer(name, &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(net)})
	att := configureAndAttach(t, m, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{net: {Aliases: aliases}}})
	return att.Addrs[0]
}

// configureAndAttach runs c's create-time network configuration, then
// attaches it as a start does.
func configureAndAttach(t *testing.T, m *Manager, c *container.Container, nc *network.NetworkingConfig) networking.Attachment {
	t.Helper()
	ctx := context.Background()
	ns, err := m.Configure(ctx, c, nc)
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings = ns
	att, err := m.Attach(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return att
}

func TestEmbeddedDNS(t *testing.T) {
	drv := newFake()
	drv.upstream = fakeUpstream(t)
	m := newManager(t, drv)
	ctx := context.Background()
	for _, req := range []network.CreateRequest{{Name: "app"}, {Name: "inner", Internal: true}} {
		if _, err := m.NetworkCreate(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	web := attachOn(t, m, "web", "app", "www")
	db := attachOn(t, m, "db", "inner")
	appGW, _ := m.find("app")
	innerGW, _ := m.find("inner")
	appDNS, innerDNS := drv.dns[appGW.Gateway], drv.dns[innerGW.Gateway]
	if appDNS == "" || innerDNS == "" {
		t.Fatalf("DNS servers listened on %v", drv.dns)
	}
	ptr, _ := dns.ReverseAddr(web.String())
	tests := []struct {
		name   string
		server string
		net    string // udp or tcp
		qname  string
		qtype  uint16
		rcode  int
		want   []string
	}{
		{"container name", appDNS, "udp", "web.", dns.TypeA, dns.RcodeSuccess, []string{web.String()}},
		{"alias", appDNS, "udp", "www.", dns.TypeA, dns.RcodeSuccess, []string{web.String()}},
		{"name.network", appDNS, "udp", "web.app.", dns.TypeA, dns.RcodeSuccess, []string{web.String()}},
		{"case", appDNS, "udp", "WeB.", dns.TypeA, dns.RcodeSuccess, []string{web.String()}},
		{"over tcp", appDNS, "tcp", "www.", dns.TypeA, dns.RcodeSuccess, []string{web.String()}},
		{"known name without IPv6", appDNS, "udp", "web.", dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"MX of a known name", appDNS, "udp", "web.", dns.TypeMX, dns.RcodeSuccess, nil},
		{"MX of another name forwarded", appDNS, "udp", "example.test.", dns.TypeMX, dns.RcodeNameError, nil},
		{"reverse", appDNS, "udp", ptr, dns.TypePTR, dns.RcodeSuccess, []string{"web.app."}},
		{"another network's container", appDNS, "udp", "db.", dns.TypeA, dns.RcodeNameError, nil},
		{"forwarded", appDNS, "udp", "example.test.", dns.TypeA, dns.RcodeSuccess, []string{"192.0.2.7"}},
		{"unknown name forwarded", appDNS, "udp", "nosuch.test.", dns.TypeA, dns.RcodeNameError, nil},
		{"internal knows its own", innerDNS, "udp", "db.", dns.TypeA, dns.RcodeSuccess, []string{db.String()}},
		{"internal forwards nothing", innerDNS, "udp", "example.test.", dns.TypeA, dns.RcodeServerFailure, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &dns.Client{Net: tt.net}
			q := new(dns.Msg)
			q.SetQuestion(tt.qname, tt.qtype)
			r, _, err := c.Exchange(q, tt.server)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rr := range r.Answer {
				switch rr := rr.(type) {
				case *dns.A:
					got = append(got, rr.A.String())
				case *dns.PTR:
					got = append(got, rr.Ptr)
				}
			}
			if r.Rcode != tt.rcode || !slices.Equal(got, tt.want) {
				t.Errorf("%s %s: rcode %s answers %v; want %s %v", tt.qname, dns.TypeToString[tt.qtype], dns.RcodeToString[r.Rcode], got, dns.RcodeToString[tt.rcode], tt.want)
			}
		})
	}
	// Removing the network stops its server.
	if err := m.Detach(ctx, webID(m, "app"), networking.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.NetworkRemove(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	c := &dns.Client{Net: "tcp"}
	q := new(dns.Msg)
	q.SetQuestion("web.", dns.TypeA)
	if _, _, err := c.Exchange(q, appDNS); err == nil {
		t.Error("the removed network's DNS server still answers")
	}
}

// webID is the ID of the one container on net.
func webID(m *Manager, net string) string {
	n, _ := m.find(net)
	for id := range n.eps {
		return id
	}
	return ""
}

// A container on two user networks resolves the names of both, whichever
// server it asks; the network asked wins when both know a name.
func TestLookupAcrossNetworks(t *testing.T) {
	m := newManager(t, newFake())
	ctx := context.Background()
	for _, name := range []string{"n1", "n2"} {
		if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	both := testContainer("both", &containertypes.HostConfig{NetworkMode: "n1"})
	ns, err := m.Configure(ctx, both, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"n2": nil}})
	if err != nil {
		t.Fatal(err)
	}
	both.NetworkSettings = ns
	att, err := m.Attach(ctx, both)
	if err != nil {
		t.Fatal(err)
	}
	client := att.Addrs[0] // its n1 address
	only2 := attachOn(t, m, "only2", "n2", "shared")
	only1 := attachOn(t, m, "only1", "n1", "shared")
	n1, _ := m.find("n1")
	stranger := netip.MustParseAddr("192.0.2.99")
	for _, tt := range []struct {
		client netip.Addr
		name   string
		want   []netip.Addr
	}{
		{client, "only2.", []netip.Addr{only2}},
		{client, "shared.", []netip.Addr{only1}},
		{stranger, "only2.", nil},
		{stranger, "only1.", []netip.Addr{only1}},
	} {
		if got := m.lookup(n1.ID, tt.client, tt.name); !slices.Equal(got, tt.want) {
			t.Errorf("lookup %s from %s = %v, want %v", tt.name, tt.client, got, tt.want)
		}
	}
}
