package network

import (
	"context"
	"net"
	"net/netip"
)

// Driver makes networks real. Every method may be called concurrently;
// errors are plain (the Manager classes them).
type Driver interface {
	// Reserved lists the prefixes a new subnet must not overlap: the
	// host's routes (containers reach those through the uplink) and the
	// uplink's own network.
	Reserved(ctx context.Context) ([]netip.Prefix, error)
	// SetupNetwork creates n's bridge with its gateway address, and its
	// NAT and isolation rules, unless they exist.
	SetupNetwork(ctx context.Context, n *Network) error
	// TeardownNetwork removes what SetupNetwork made; what is already gone
	// is no error.
	TeardownNetwork(ctx context.Context, n *Network) error

	// NewSandbox creates a network namespace for container id, with
	// loopback up, and returns the path that containers join it by.
	NewSandbox(ctx context.Context, id string) (string, error)
	// RemoveSandbox deletes container id's namespace; none is no error.
	RemoveSandbox(ctx context.Context, id string) error
	// Sandboxes lists the containers that have a namespace, so that the
	// ones left by a daemon that died can be removed.
	Sandboxes(ctx context.Context) ([]string, error)
	// SandboxLive reports whether container id's namespace is still
	// there to join: a daemon restarted in a new mount namespace finds
	// only the file its predecessor's bind mount was on, and the
	// namespace gone with the container's interfaces in it.
	SandboxLive(ctx context.Context, id string) bool
	// Plug connects the namespace at path to n: a veth pair whose end
	// ep.HostIf is on n's bridge and whose other end, ep.IfName, has
	// ep.MAC and ep's addresses (ep.IP, ep.IP6: IPv6 on the interface
	// only when it has an IPv6 address, and usable at once). The default
	// routes routes names go through n's gateways, replacing those the
	// namespace had.
	Plug(ctx context.Context, path string, n *Network, ep *Endpoint, routes Routes) error
	// Reroute makes gw4 and gw6 the default routes of the namespace at
	// path; a zero Gateway leaves its family without one.
	Reroute(ctx context.Context, path string, gw4, gw6 Gateway) error
	// Unplug deletes ep's veth pair; one already gone is no error.
	Unplug(ctx context.Context, ep *Endpoint) error

	// Publish forwards a host port to ChildIP:ChildPort and returns the
	// forward with its ID and the host port chosen (the first free one of
	// HostPort..HostPortEnd, or any free one when HostPort is 0). A port
	// in use is an error wrapping syscall.EADDRINUSE.
	Publish(ctx context.Context, f Forward) (Forward, error)
	// Unpublish removes a forward that Publish returned.
	Unpublish(ctx context.Context, f Forward) error
	// Forwards lists the forwards that are in place: with live restore,
	// those an earlier engine published outlive it.
	Forwards(ctx context.Context) ([]Forward, error)

	// ListenDNS opens the embedded DNS server's sockets (UDP and TCP,
	// port 53) on addr (IPv4 or IPv6), where the containers of a network
	// reach it.
	ListenDNS(ctx context.Context, addr netip.Addr) (net.PacketConn, net.Listener, error)
	// DialUpstream connects to the resolver that names the embedded DNS
	// server does not know go to ("udp" or "tcp").
	DialUpstream(ctx context.Context, network string) (net.Conn, error)
	// DialIn connects to addr ("udp" or "tcp") from inside the network
	// namespace at path (a container's, as NewSandbox returned it): a
	// container's own DNS servers are asked from where it is.
	DialIn(ctx context.Context, path, network string, addr netip.AddrPort) (net.Conn, error)
	// HostGateway is the address at which containers reach the host's
	// loopback: what host-gateway and host.docker.internal resolve to.
	HostGateway() netip.Addr
	// Nameserver is the resolver containers of the default bridge use.
	Nameserver() netip.Addr
}

// Forward is one published port.
type Forward struct {
	// ID is the driver's handle, set by Publish.
	ID int
	// Proto is "tcp" or "udp".
	Proto string
	// HostIP is the host address listened on; the zero Addr is all of them.
	HostIP netip.Addr
	// HostPort..HostPortEnd is the range to take a port from; 0 is any.
	HostPort, HostPortEnd uint16
	// ChildIP and ChildPort are the container's address and port.
	ChildIP   netip.Addr
	ChildPort uint16
	// DualStack is set by Publish when a listener on all addresses also
	// takes IPv6: the port is shown on 0.0.0.0 and ::, as Docker does.
	DualStack bool
}

// Routes says which of a namespace's default routes go through an
// interface.
type Routes struct{ V4, V6 bool }

// Gateway is a namespace's default route of one family: through its
// interface IfName to Via.
type Gateway struct {
	IfName string
	Via    netip.Addr
}
