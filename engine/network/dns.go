package network

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/hutch-engine/hutch/engine/container"
)

// dnsTTL is the TTL of the names the embedded server answers, Docker's.
const dnsTTL = 600

// dnsServer is a user network's embedded DNS server, listening on the
// network's gateway address: it answers the names and aliases of the
// containers on the networks of the asking container and forwards the
// rest to that container's servers (dnsforward.go).
type dnsServer struct {
	pc net.PacketConn
	l  net.Listener
}

func (m *Manager) startDNS(ctx context.Context, n *netState) (*dnsServer, error) {
	pc, l, err := m.drv.ListenDNS(ctx, n.dnsAddr())
	if err != nil {
		return nil, err
	}
	h := m.newResolver(n)
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: l, Handler: h}} {
		go func() {
			if err := s.ActivateAndServe(); err != nil {
				m.log.Debug("embedded DNS server stopped", "network", n.Name, "err", err)
			}
		}()
	}
	return &dnsServer{pc: pc, l: l}, nil
}

// stop closes the sockets, which ends the servers. It does not wait for
// queries in flight: they may wait for the Manager's lock, which the
// caller holds.
func (d *dnsServer) stop() {
	d.pc.Close()
	d.l.Close()
}

// resolver answers the queries that arrive on one network.
type resolver struct {
	m        *Manager
	netID    string
	internal bool
	// sem bounds the queries being forwarded at once.
	sem chan struct{}
}

func (m *Manager) newResolver(n *netState) *resolver {
	return &resolver{m: m, netID: n.ID, internal: n.Internal, sem: make(chan struct{}, maxForwards)}
}

func (r *resolver) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	client := remoteIP(w.RemoteAddr())
	resp, forward := r.answer(q, client)
	if forward {
		resp = r.forward(q, w.RemoteAddr().Network(), client)
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if o := q.IsEdns0(); o != nil {
			size = int(o.UDPSize())
		}
		resp.Truncate(size)
	}
	w.WriteMsg(resp)
}

// answer answers q from the containers' names; forward says the name is
// not ours: forward decides where it goes.
func (r *resolver) answer(q *dns.Msg, client netip.Addr) (resp *dns.Msg, forward bool) {
	resp = new(dns.Msg)
	resp.SetReply(q)
	if len(q.Question) != 1 || q.Opcode != dns.OpcodeQuery {
		resp.Rcode = dns.RcodeNotImplemented
		return resp, false
	}
	qq := q.Question[0]
	if qq.Qclass != dns.ClassINET {
		return resp, true
	}
	switch qq.Qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeMX:
		ips := r.m.lookup(r.netID, client, qq.Name)
		if len(ips) == 0 {
			break
		}
		resp.Authoritative = true
		for _, ip := range ips {
			hdr := dns.RR_Header{Name: qq.Name, Rrtype: qq.Qtype, Class: dns.ClassINET, Ttl: dnsTTL}
			switch {
			case qq.Qtype == dns.TypeA && ip.Is4():
				resp.Answer = append(resp.Answer, &dns.A{Hdr: hdr, A: net.IP(ip.AsSlice())})
			case qq.Qtype == dns.TypeAAAA && ip.Is6():
				resp.Answer = append(resp.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.IP(ip.AsSlice())})
			}
		}
		// A name known without an address of the family asked for (AAAA
		// on an IPv4 network, A on an IPv6-only one): it exists, without
		// records. MX: it exists, without records, so mail goes to its
		// address (RFC 5321 5.1's implicit MX), as Docker answers.
		return resp, false
	case dns.TypePTR:
		if name := r.m.reverse(r.netID, client, qq.Name); name != "" {
			resp.Authoritative = true
			resp.Answer = append(resp.Answer, &dns.PTR{
				Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: dnsTTL},
				Ptr: dns.Fqdn(name),
			})
			return resp, false
		}
	}
	return resp, true
}

func remoteIP(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// queryNetworks are the networks whose names a client sees, the network
// the query came in on first: all networks of the client's container.
func (m *Manager) queryNetworks(netID string, client netip.Addr) []*netState {
	out := []*netState{}
	if n := m.nets[netID]; n != nil {
		out = append(out, n)
	}
	if sb := m.clientSandbox(netID, client); sb != nil {
		for _, id := range sb.order {
			if n := m.nets[id]; n != nil && id != netID && n.UserDefined() {
				out = append(out, n)
			}
		}
	}
	return out
}

// clientSandbox is the sandbox of the container at address client on
// network netID, nil when none is there. The caller holds m.mu.
func (m *Manager) clientSandbox(netID string, client netip.Addr) *sandbox {
	n := m.nets[netID]
	if n == nil {
		return nil
	}
	for id, ep := range n.eps {
		if ep.has(client) {
			return m.sandboxes[id]
		}
	}
	return nil
}

// lookup returns the addresses of a name ("db", "db.", "db.mynet.") on
// the networks client sees, IPv4 and IPv6: those of the first network
// that knows it.
func (m *Manager) lookup(netID string, client netip.Addr, qname string) []netip.Addr {
	name := strings.ToLower(strings.TrimSuffix(qname, "."))
	if name == "" {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, n := range m.queryNetworks(netID, client) {
		short := name
		if s, ok := strings.CutSuffix(name, "."+strings.ToLower(n.Name)); ok {
			short = s
		}
		short = linkTarget(n, client, short)
		var ips []netip.Addr
		for _, ep := range n.eps {
			if slices.ContainsFunc(ep.DNSNames, func(d string) bool { return strings.EqualFold(d, short) }) {
				ips = append(ips, ep.Addrs()...)
			}
		}
		if len(ips) > 0 {
			slices.SortFunc(ips, netip.Addr.Compare)
			return ips
		}
	}
	return nil
}

// linkTarget is the container name a link alias of client's endpoint on
// n stands for (--link db:alias on a user network), else name.
func linkTarget(n *netState, client netip.Addr, name string) string {
	for _, ep := range n.eps {
		if !ep.has(client) {
			continue
		}
		for _, l := range ep.Links {
			if target, alias, err := container.ParseLink(l); err == nil && strings.EqualFold(alias, name) {
				return strings.ToLower(target)
			}
		}
	}
	return name
}

// reverse answers a PTR query for an address of the client's networks.
func (m *Manager) reverse(netID string, client netip.Addr, qname string) string {
	ip, err := arpaAddr(qname)
	if err != nil {
		return ""
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, n := range m.queryNetworks(netID, client) {
		for _, ep := range n.eps {
			if ep.has(ip) && len(ep.DNSNames) > 0 {
				return ep.DNSNames[0] + "." + n.Name
			}
		}
	}
	return ""
}

// arpaAddr reads an IPv4 in-addr.arpa or an IPv6 ip6.arpa name.
func arpaAddr(qname string) (netip.Addr, error) {
	name := strings.ToLower(strings.TrimSuffix(qname, "."))
	if s, ok := strings.CutSuffix(name, ".ip6.arpa"); ok {
		return arpa6(s)
	}
	s, ok := strings.CutSuffix(name, ".in-addr.arpa")
	if !ok {
		return netip.Addr{}, errors.New("not an in-addr.arpa or ip6.arpa name")
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, errors.New("not a full address")
	}
	slices.Reverse(parts)
	return netip.ParseAddr(strings.Join(parts, "."))
}

// arpa6 reads the 32 reversed nibbles of an ip6.arpa name.
func arpa6(s string) (netip.Addr, error) {
	nibbles := strings.Split(s, ".")
	if len(nibbles) != 32 {
		return netip.Addr{}, errors.New("not a full address")
	}
	var b [16]byte
	for i, nb := range nibbles {
		if len(nb) != 1 {
			return netip.Addr{}, errors.New("not a nibble")
		}
		v, err := strconv.ParseUint(nb, 16, 8)
		if err != nil {
			return netip.Addr{}, err
		}
		pos := 31 - i // the first label is the last nibble
		if pos%2 == 0 {
			b[pos/2] |= byte(v) << 4
		} else {
			b[pos/2] |= byte(v)
		}
	}
	return netip.AddrFrom16(b), nil
}
