package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// ListenDNS implements engine/network.Driver: the sockets are made on the
// namespace thread, so they listen in the detached namespace, on the
// network's gateway address (its IPv6 one on an IPv6-only network) where
// its containers send their queries.
func (d *Driver) ListenDNS(ctx context.Context, addr netip.Addr) (net.PacketConn, net.Listener, error) {
	var pc net.PacketConn
	var l net.Listener
	hostport := net.JoinHostPort(addr.String(), "53")
	err := d.ns.do(func() error {
		udp, tcp := "udp4", "tcp4"
		if addr.Is6() {
			udp, tcp = "udp6", "tcp6"
		}
		var err error
		if pc, err = net.ListenPacket(udp, hostport); err != nil {
			return err
		}
		if l, err = net.Listen(tcp, hostport); err != nil {
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

// DialIn implements engine/network.Driver. The socket must be made in
// the container's namespace: a thread of its own enters it and dials
// there. It is not given back (the engine's threads could not return to
// the host's namespace): it ends with its goroutine. The namespace
// threads are not used, so that a TCP dial waiting on a server that does
// not answer holds none of them.
func (d *Driver) DialIn(ctx context.Context, path, network string, addr netip.AddrPort) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		c, err := dialInNS(ctx, path, network, addr)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// dialInNS enters the namespace at path on the calling (locked) thread and
// dials addr there.
func dialInNS(ctx context.Context, path, network string, addr netip.AddrPort) (net.Conn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("entering the network namespace %s: %w", path, err)
	}
	var dl net.Dialer
	return dl.DialContext(ctx, network, addr.String())
}
