package network

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/miekg/dns"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// testServer is a DNS server on loopback (udp and tcp, one port) that
// answers the A records of names it knows, and other queries with
// rcode. A silent one reads and never answers.
func testServer(t *testing.T, rcode int, names map[string]string, silent bool) string {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		if silent {
			return
		}
		r := new(dns.Msg)
		r.SetRcode(q, rcode)
		if ip, ok := names[q.Question[0].Name]; ok && q.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(q.Question[0].Name + " 60 IN A " + ip)
			r.Answer = append(r.Answer, rr)
			r.Rcode = dns.RcodeSuccess
		}
		w.WriteMsg(r)
	})
	for range 20 {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			continue
		}
		for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
			go s.ActivateAndServe()
		}
		t.Cleanup(func() { pc.Close(); l.Close() })
		return pc.LocalAddr().String()
	}
	t.Fatal("no loopback port free for udp and tcp")
	return ""
}

// fakeWriter is the client side of one query: ServeDNS writes its answer
// here.
type fakeWriter struct {
	remote net.Addr
	msg    *dns.Msg
}

func (w *fakeWriter) LocalAddr() net.Addr         { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *fakeWriter) RemoteAddr() net.Addr        { return w.remote }
func (w *fakeWriter) WriteMsg(m *dns.Msg) error   { w.msg = m; return nil }
func (w *fakeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *fakeWriter) Close() error                { return nil }
func (w *fakeWriter) TsigStatus() error           { return nil }
func (w *fakeWriter) TsigTimersOnly(bool)         {}
func (w *fakeWriter) Hijack()                     {}

// ask sends a query for qname's A record to r from client over proto and
// returns the answer's rcode and addresses.
func ask(t *testing.T, r *resolver, client netip.Addr, proto, qname string) (string, []string) {
	t.Helper()
	w := &fakeWriter{remote: &net.UDPAddr{IP: client.AsSlice(), Port: 40000}}
	if proto == "tcp" {
		w.remote = &net.TCPAddr{IP: client.AsSlice(), Port: 40000}
	}
	q := new(dns.Msg)
	q.SetQuestion(qname, dns.TypeA)
	r.ServeDNS(w, q)
	if w.msg == nil {
		t.Fatalf("no answer to %s", qname)
	}
	var ips []string
	for _, rr := range w.msg.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	return dns.RcodeToString[w.msg.Rcode], ips
}

// dnsClient starts a container with --dns servers on the user network
// net and returns its address there and its namespace's path.
func dnsClient(t *testing.T, m *Manager, name, net string, servers ...string) (netip.Addr, string) {
	t.Helper()
	hc := &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(net)}
	for _, s := range servers {
		hc.DNS = append(hc.DNS, netip.MustParseAddr(s))
	}
	att := configureAndAttach(t, m, testContainer(name, hc), nil)
	return att.Addrs[0], att.NetNSPath
}

// A container's --dns servers get the names the embedded server does not
// know, asked from the container's namespace, in order, over the
// client's protocol: past one that cannot be reached, is silent, or
// answers SERVFAIL or REFUSED, up to the third; NXDOMAIN is an answer.
// The server's own address is never asked; a container without --dns
// gets the upstream resolver.
func TestForwardToContainerDNS(t *testing.T) {
	defer func(d time.Duration) { forwardTimeout = d }(forwardTimeout)
	forwardTimeout = 300 * time.Millisecond
	drv := newFake()
	drv.upstream = fakeUpstream(t)
	hello := map[string]string{"hello.hutch.test.": "10.9.8.7"}
	drv.servers = map[netip.Addr]string{
		netip.MustParseAddr("192.0.2.53"): testServer(t, dns.RcodeNameError, hello, false),
		netip.MustParseAddr("192.0.2.54"): testServer(t, dns.RcodeServerFailure, nil, false),
		netip.MustParseAddr("192.0.2.55"): testServer(t, dns.RcodeRefused, nil, false),
		netip.MustParseAddr("192.0.2.57"): testServer(t, dns.RcodeSuccess, map[string]string{"hello.hutch.test.": "10.0.0.57", "nosuch.hutch.test.": "10.0.0.57"}, false),
		netip.MustParseAddr("192.0.2.58"): testServer(t, dns.RcodeSuccess, nil, true),
		// 192.0.2.56: nothing there.
	}
	m := newManager(t, drv)
	ctx := context.Background()
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	app, _ := m.find("app")
	r := m.newResolver(app)
	web := attachOn(t, m, "web", "app")
	tests := []struct {
		name    string
		servers []string
		proto   string
		qname   string
		rcode   string
		ips     []string
		dialed  []string // the servers asked, in order
	}{
		{name: "first server answers", servers: []string{"192.0.2.53", "192.0.2.57"}, qname: "hello.hutch.test.", rcode: "NOERROR", ips: []string{"10.9.8.7"}, dialed: []string{"192.0.2.53"}},
		{name: "past unreachable, SERVFAIL and REFUSED", servers: []string{"192.0.2.56", "192.0.2.54", "192.0.2.55"}, qname: "hello.hutch.test.", rcode: "SERVFAIL", dialed: []string{"192.0.2.56", "192.0.2.54", "192.0.2.55"}},
		{name: "to the third", servers: []string{"192.0.2.56", "192.0.2.54", "192.0.2.53"}, qname: "hello.hutch.test.", rcode: "NOERROR", ips: []string{"10.9.8.7"}, dialed: []string{"192.0.2.56", "192.0.2.54", "192.0.2.53"}},
		{name: "not the fourth", servers: []string{"192.0.2.56", "192.0.2.54", "192.0.2.55", "192.0.2.53"}, qname: "hello.hutch.test.", rcode: "SERVFAIL", dialed: []string{"192.0.2.56", "192.0.2.54", "192.0.2.55"}},
		{name: "past a silent one", servers: []string{"192.0.2.58", "192.0.2.53"}, qname: "hello.hutch.test.", rcode: "NOERROR", ips: []string{"10.9.8.7"}, dialed: []string{"192.0.2.58", "192.0.2.53"}},
		{name: "NXDOMAIN is an answer", servers: []string{"192.0.2.53", "192.0.2.57"}, qname: "nosuch.hutch.test.", rcode: "NXDOMAIN", dialed: []string{"192.0.2.53"}},
		{name: "over tcp", servers: []string{"192.0.2.53"}, proto: "tcp", qname: "hello.hutch.test.", rcode: "NOERROR", ips: []string{"10.9.8.7"}, dialed: []string{"192.0.2.53"}},
		{name: "its own address left out", servers: []string{app.Gateway.String(), "192.0.2.53"}, qname: "hello.hutch.test.", rcode: "NOERROR", ips: []string{"10.9.8.7"}, dialed: []string{"192.0.2.53"}},
		{name: "only its own address: nothing asked", servers: []string{app.Gateway.String()}, qname: "example.test.", rcode: "SERVFAIL"},
		{name: "containers' names stay the embedded server's", servers: []string{"192.0.2.57"}, qname: "web.", rcode: "NOERROR", ips: []string{web.String()}},
		{name: "no --dns: upstream", qname: "example.test.", rcode: "NOERROR", ips: []string{"192.0.2.7"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, path := dnsClient(t, m, "client"+string(rune('a'+i)), "app", tt.servers...)
			proto := tt.proto
			if proto == "" {
				proto = "udp"
			}
			drv.mu.Lock()
			drv.dialed = nil
			drv.mu.Unlock()
			rcode, ips := ask(t, r, client, proto, tt.qname)
			if rcode != tt.rcode || !slices.Equal(ips, tt.ips) {
				t.Errorf("%s: %s %v, want %s %v", tt.qname, rcode, ips, tt.rcode, tt.ips)
			}
			var want []string
			for _, s := range tt.dialed {
				want = append(want, path+" "+proto+" "+s+":53")
			}
			drv.mu.Lock()
			defer drv.mu.Unlock()
			if !slices.Equal(drv.dialed, want) {
				t.Errorf("asked %q, want %q", drv.dialed, want)
			}
		})
	}
}

// On an internal network the container's --dns servers are asked all the
// same (from its namespace, where they may be on-net); without --dns
// nothing is forwarded.
func TestForwardInternal(t *testing.T) {
	drv := newFake()
	drv.upstream = fakeUpstream(t)
	drv.servers = map[netip.Addr]string{netip.MustParseAddr("192.0.2.53"): testServer(t, dns.RcodeNameError, map[string]string{"hello.hutch.test.": "10.9.8.7"}, false)}
	m := newManager(t, drv)
	if _, err := m.NetworkCreate(context.Background(), network.CreateRequest{Name: "inner", Internal: true}); err != nil {
		t.Fatal(err)
	}
	inner, _ := m.find("inner")
	r := m.newResolver(inner)
	with, _ := dnsClient(t, m, "with", "inner", "192.0.2.53")
	without, _ := dnsClient(t, m, "without", "inner")
	if rcode, ips := ask(t, r, with, "udp", "hello.hutch.test."); rcode != "NOERROR" || !slices.Equal(ips, []string{"10.9.8.7"}) {
		t.Errorf("with --dns on an internal network: %s %v", rcode, ips)
	}
	if rcode, ips := ask(t, r, without, "udp", "example.test."); rcode != "SERVFAIL" || ips != nil {
		t.Errorf("without --dns on an internal network: %s %v", rcode, ips)
	}
}

// The servers are the container's wherever its queries arrive: on a
// network connected while it runs, and after a restore by a new daemon.
func TestForwardAfterConnectAndRestore(t *testing.T) {
	drv := newFake()
	drv.servers = map[netip.Addr]string{netip.MustParseAddr("192.0.2.53"): testServer(t, dns.RcodeNameError, map[string]string{"hello.hutch.test.": "10.9.8.7"}, false)}
	root := t.TempDir()
	ctx := context.Background()
	m, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "later"}); err != nil {
		t.Fatal(err)
	}
	c := testContainer("c", &containertypes.HostConfig{DNS: []netip.Addr{netip.MustParseAddr("192.0.2.53")}})
	att := configureAndAttach(t, m, c, nil)
	c.NetworkSettings = att.Settings
	name, ep, err := m.Connect(ctx, c, "later", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings.Networks[name] = ep
	later, _ := m.find("later")
	check := func(m *Manager, when string) {
		t.Helper()
		rcode, ips := ask(t, m.newResolver(later), ep.IPAddress, "udp", "hello.hutch.test.")
		if rcode != "NOERROR" || !slices.Equal(ips, []string{"10.9.8.7"}) {
			t.Errorf("%s: %s %v", when, rcode, ips)
		}
	}
	check(m, "after the connect")

	m2, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); m2.Close() })
	if lost, err := m2.Restore(ctx, []*container.Container{c}); err != nil || len(lost) > 0 {
		t.Fatalf("restore: %v, lost %v", err, lost)
	}
	later, _ = m2.find("later")
	check(m2, "after the restore")
	drv.mu.Lock()
	defer drv.mu.Unlock()
	for _, d := range drv.dialed {
		if !strings.HasPrefix(d, att.NetNSPath+" ") {
			t.Errorf("asked from %q, want from the container's namespace %s", d, att.NetNSPath)
		}
	}
}
