package network

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/miekg/dns"
)

// FuzzCheckCreate feeds POST /networks/create bodies, as a client may
// send anything, through the decoding and the checks: no panic, and what
// passes is a network hutch can run.
func FuzzCheckCreate(f *testing.F) {
	for _, s := range []string{
		`{"Name":"n"}`,
		`{"Name":"n","Driver":"bridge","Internal":true,"Labels":{"a":"b"}}`,
		`{"Name":"n","IPAM":{"Driver":"default","Config":[{"Subnet":"10.9.0.0/24","Gateway":"10.9.0.254","IPRange":"10.9.0.128/25"}]}}`,
		`{"Name":"n","IPAM":{"Config":[{"Subnet":"fd00::/64"},{"Subnet":"10.0.0.0/8"}]}}`,
		`{"Name":"n","EnableIPv6":true}`,
		`{"Name":"n","EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00::/56","IPRange":"fd00::/64","Gateway":"fd00::1"}]}}`,
		`{"Name":"n","EnableIPv4":false,"EnableIPv6":true,"IPAM":{"Config":[{"Subnet":"fd00::/126","IPRange":"fd00::2/127"}]}}`,
		`{"Name":"","IPAM":{"Config":[{"Gateway":"10.0.0.1"}]}}`,
		`{"Name":"n","IPAM":{"Config":[{"Subnet":"10.9.0.0/30","Gateway":"10.9.0.3"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req network.CreateRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		n, _, err := checkCreate(req)
		if err != nil {
			return
		}
		if n.Name == "" || n.Driver != driverBridge {
			t.Fatalf("accepted %+v", n)
		}
		for _, fam := range []struct {
			s, r netip.Prefix
			g    netip.Addr
			v6   bool
		}{{n.Subnet, n.IPRange, n.Gateway, false}, {n.Subnet6, n.IPRange6, n.Gateway6, true}} {
			s := fam.s
			if !s.IsValid() {
				continue
			}
			maxBits := 30
			if fam.v6 {
				maxBits = 126
			}
			if s.Addr().Is6() != fam.v6 || s != s.Masked() || s.Bits() > maxBits {
				t.Fatalf("accepted subnet %s", s)
			}
			if g := fam.g; !s.Contains(g) || g == s.Addr() || (!fam.v6 && g == broadcast(s)) {
				t.Fatalf("accepted gateway %s in %s", g, s)
			}
			if r := fam.r; r.IsValid() && (r.Bits() < s.Bits() || !s.Contains(r.Addr())) {
				t.Fatalf("accepted range %s in %s", r, s)
			}
			// The pool of an accepted network always has an address to
			// give or says it has none.
			p := newPool(s, fam.r, fam.g)
			if ip, err := p.allocate("c"); err == nil && !p.usable(ip) {
				t.Fatalf("allocated %s in %s", ip, s)
			}
		}
	})
}

// FuzzParseHostPort checks the HostPort strings of port bindings.
func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{"", "0", "80", "8000-8010", "9-1", "65535", "65536", "-", "1-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, end, err := parseHostPort(s)
		if err != nil {
			return
		}
		if end < start || (start == 0) != (end == 0) {
			t.Fatalf("parseHostPort(%q) = %d-%d", s, start, end)
		}
	})
}

// FuzzEmbeddedDNS feeds the embedded DNS server queries a container may
// send: whatever decodes as a DNS message gets an answer to it (its ID)
// that packs, with no panic. What is not the containers' goes to the
// asking container's --dns server, which the fake driver cannot reach:
// SERVFAIL.
func FuzzEmbeddedDNS(f *testing.F) {
	m, err := New(context.Background(), Options{Root: f.TempDir(), Driver: newFake()})
	if err != nil {
		f.Fatal(err)
	}
	defer m.Close()
	if _, err := m.NetworkCreate(context.Background(), network.CreateRequest{Name: "app"}); err != nil {
		f.Fatal(err)
	}
	c := testContainer("web", &containertypes.HostConfig{NetworkMode: "app", DNS: []netip.Addr{netip.MustParseAddr("192.0.2.53")}})
	ns, err := m.Configure(context.Background(), c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"app": {Aliases: []string{"www"}, Links: []string{"db:base"}}}})
	if err != nil {
		f.Fatal(err)
	}
	c.NetworkSettings = ns
	att, err := m.Attach(context.Background(), c)
	if err != nil {
		f.Fatal(err)
	}
	app, _ := m.find("app")
	r := m.newResolver(app)
	ptr, _ := dns.ReverseAddr(att.Addrs[0].String())
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"web.", dns.TypeA}, {"www.app.", dns.TypeAAAA}, {ptr, dns.TypePTR}, {"base.", dns.TypeA}, {"nosuch.test.", dns.TypeMX}, {"1.2.in-addr.arpa.", dns.TypePTR}} {
		msg := new(dns.Msg)
		msg.SetQuestion(q.name, q.qtype)
		msg.SetEdns0(4096, false)
		b, err := msg.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, tcp bool) {
		q := new(dns.Msg)
		if q.Unpack(b) != nil {
			return
		}
		w := &fakeWriter{remote: &net.UDPAddr{IP: att.Addrs[0].AsSlice(), Port: 40000}}
		if tcp {
			w.remote = &net.TCPAddr{IP: att.Addrs[0].AsSlice(), Port: 40000}
		}
		r.ServeDNS(w, q)
		if w.msg == nil || w.msg.Id != q.Id || !w.msg.Response {
			t.Fatalf("answer %v to %v", w.msg, q)
		}
		if _, err := w.msg.Pack(); err != nil {
			t.Fatalf("the answer to %v does not pack: %v", q, err)
		}
	})
}
