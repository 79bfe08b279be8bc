package network

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
)

// ListenDNS implements engine/network.Driver: the sockets are made on the
// namespace thread, so they listen in the detached namespace, on the
// network's gateway address where its containers send their queries.
func (d *Driver) ListenDNS(ctx context.Context, addr netip.Addr) (net.PacketConn, net.Listener, error) {
	var pc net.PacketConn
	var l net.Listener
	hostport := net.JoinHostPort(addr.String(), "53")
	err := d.ns.do(func() error {
		var err error
		if pc, err = net.ListenPacket("udp4", hostport); err != nil {
			return err
		}
		if l, err = net.Listen("tcp4", hostport); err != nil {
			pc.Close()
			return err
		}
		return nil
	})
	return pc, l, err
}

// DialUpstream implements engine/network.Driver: slirp4netns's DNS
// forwarder, reachable only from the detached namespace.
func (d *Driver) DialUpstream(ctx context.Context, network string) (net.Conn, error) {
	if !d.o.Nameserver.IsValid() {
		return nil, errors.New("no upstream resolver")
	}
	var c net.Conn
	err := d.ns.do(func() error {
		var dl net.Dialer
		var err error
		c, err = dl.DialContext(ctx, network, net.JoinHostPort(d.o.Nameserver.String(), strconv.Itoa(53)))
		return err
	})
	return c, err
}
