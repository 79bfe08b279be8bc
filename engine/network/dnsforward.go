package network

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/hutch-engine/hutch/engine/container"
)

// Names the embedded DNS server does not know go to the asking
// container's own servers, its --dns (HostConfig.Dns) or else the
// daemon's (daemon.json's dns, containerDNS), as Docker's resolver
// forwards them to a container's external servers (libnetwork's
// Resolver.forwardExtDNS); a container with neither has them forwarded to
// the default bridge's resolver (slirp4netns's, which asks the host's),
// where Docker asks the host's servers itself. As Docker does:
//
//   - the first maxExtDNS servers are asked, in order (the container's
//     resolv.conf on a user network names the embedded server only);
//   - a server that cannot be reached, does not answer within
//     forwardTimeout, or answers SERVFAIL or REFUSED is passed over for
//     the next; any other answer (NXDOMAIN too) is the client's; when
//     none answers, SERVFAIL;
//   - a query goes out over the protocol it came in on: a truncated
//     answer over UDP has the client ask again over TCP;
//   - the servers are dialled from inside the container's network
//     namespace: a loopback server is the container's own, and the
//     container's routes and networks decide what it reaches, as they
//     would for its own resolver. So a container of an internal network
//     reaches its --dns servers on that network, while nothing of it
//     goes upstream;
//   - the resolver's own addresses are left out: a --dns naming the
//     gateway of a user network would have the server ask itself. A
//     container left with none gets SERVFAIL, not the upstream;
//   - at most maxForwards queries of a network are forwarded at once;
//     a query that waits longer than forwardTimeout for its turn is
//     REFUSED.
const (
	maxExtDNS   = 3
	maxForwards = 1024
)

// forwardTimeout bounds the wait for one server's answer (Docker's
// extIOTimeout); tests shorten it.
var forwardTimeout = 4 * time.Second

// forward sends q, which arrived over network ("udp", "tcp") from
// client, to the servers of the asking container, and returns the answer
// to give the client.
func (r *resolver) forward(q *dns.Msg, network string, client netip.Addr) *dns.Msg {
	proto := "udp"
	if strings.HasPrefix(network, "tcp") {
		proto = "tcp"
	}
	servers, nsPath, own := r.m.extDNS(r.netID, client)
	if !own && r.internal {
		return reply(q, dns.RcodeServerFailure) // an internal network reaches nothing upstream
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-time.After(forwardTimeout):
		r.m.log.Debug("embedded DNS: too many queries forwarded at once", "limit", maxForwards)
		return reply(q, dns.RcodeRefused)
	}
	if !own {
		resp := r.exchange(q, "upstream", func(ctx context.Context) (net.Conn, error) {
			return r.m.drv.DialUpstream(ctx, proto)
		})
		if resp == nil {
			return reply(q, dns.RcodeServerFailure)
		}
		return resp
	}
	for _, s := range servers {
		server := netip.AddrPortFrom(s, 53)
		resp := r.exchange(q, server.String(), func(ctx context.Context) (net.Conn, error) {
			return r.m.drv.DialIn(ctx, nsPath, proto, server)
		})
		if resp == nil || resp.Rcode == dns.RcodeServerFailure || resp.Rcode == dns.RcodeRefused {
			continue
		}
		return resp
	}
	return reply(q, dns.RcodeServerFailure)
}

// exchange sends q over the connection dial makes and returns the answer,
// nil when none came within forwardTimeout. server names it in the log.
func (r *resolver) exchange(q *dns.Msg, server string, dial func(context.Context) (net.Conn, error)) *dns.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	conn, err := dial(ctx)
	if err != nil {
		r.m.log.Debug("embedded DNS: forwarding", "server", server, "err", err)
		return nil
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	co := &dns.Conn{Conn: conn, UDPSize: dns.MaxMsgSize}
	if err := co.WriteMsg(q); err != nil {
		r.m.log.Debug("embedded DNS: forwarding", "server", server, "err", err)
		return nil
	}
	for {
		resp, err := co.ReadMsg()
		if err != nil {
			r.m.log.Debug("embedded DNS: forwarded answer", "server", server, "err", err)
			return nil
		}
		if resp.Id == q.Id {
			return resp
		}
	}
}

func reply(q *dns.Msg, rcode int) *dns.Msg {
	return new(dns.Msg).SetRcode(q, rcode)
}

// extDNS returns the servers of the container at address client on
// network netID (its sandbox's: --dns or the daemon's; at most maxExtDNS
// of them, the embedded servers' own addresses left out) and the path of
// its network namespace; own is false when no container with servers is
// there. A container whose servers are all left out has none to ask
// (Docker's then answers SERVFAIL).
func (m *Manager) extDNS(netID string, client netip.Addr) (servers []netip.Addr, nsPath string, own bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sb := m.clientSandbox(netID, client)
	if sb == nil || sb.path == "" || len(sb.dns) == 0 {
		return nil, "", false
	}
	for _, a := range sb.dns {
		a = a.Unmap()
		if m.embeddedAddr(a) {
			m.log.Debug("embedded DNS: not forwarding to its own address", "container", sb.id, "server", a)
			continue
		}
		if servers = append(servers, a); len(servers) == maxExtDNS {
			break
		}
	}
	return servers, sb.path, true
}

// embeddedAddr reports whether a is where an embedded DNS server listens:
// the gateway of a user network (its IPv6 one on an IPv6-only network).
// The caller holds m.mu.
func (m *Manager) embeddedAddr(a netip.Addr) bool {
	for _, n := range m.nets {
		if n.UserDefined() && n.dnsAddr() == a {
			return true
		}
	}
	return false
}

// containerDNS are the servers c's queries are forwarded to: its --dns,
// else the daemon's (Options.DNS).
func (m *Manager) containerDNS(c *container.Container) []netip.Addr {
	if len(c.HostConfig.DNS) > 0 {
		return slices.Clone(c.HostConfig.DNS)
	}
	return slices.Clone(m.dns)
}
