package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port"
)

// randomTries bounds how often a random port is tried again when another
// process takes it between the probe and rootlesskit's listen.
const randomTries = 8

// Publish implements engine/network.Driver through rootlesskit's port
// driver: its parent process, in the host's namespace, listens on the host
// port and hands each connection to its child, which dials the container
// from the detached namespace.
func (d *Driver) Publish(ctx context.Context, f enet.Forward) (enet.Forward, error) {
	if d.ports == nil {
		return f, errors.New("no port driver: the daemon runs without rootlesskit's port driver")
	}
	proto := f.Proto
	switch {
	case f.HostIP.Is4():
		proto += "4"
	case f.HostIP.Is6():
		proto += "6"
	}
	parentIP := ""
	if f.HostIP.IsValid() {
		parentIP = f.HostIP.String()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var candidates []uint16
	if f.HostPort == 0 {
		for range randomTries {
			p, err := freePort(proto, parentIP)
			if err != nil {
				return f, err
			}
			candidates = append(candidates, p)
		}
	} else {
		for p := uint32(f.HostPort); p <= uint32(max(f.HostPortEnd, f.HostPort)); p++ {
			candidates = append(candidates, uint16(p))
		}
	}
	var last error
	for _, p := range candidates {
		st, err := d.ports.PortManager().AddPort(ctx, port.Spec{
			Proto: proto, ParentIP: parentIP, ParentPort: int(p),
			ChildIP: f.ChildIP.String(), ChildPort: int(f.ChildPort),
		})
		if err == nil {
			f.ID, f.HostPort = st.ID, p
			f.DualStack = !f.HostIP.IsValid() && d.ipv6
			return f, nil
		}
		if !inUse(err) {
			return f, err
		}
		last = fmt.Errorf("%w (%v)", syscall.EADDRINUSE, err)
	}
	return f, last
}

// inUse recognises "address already in use" in rootlesskit's answer (it
// comes as text over its API) and its own duplicate check.
func inUse(err error) bool {
	s := err.Error()
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(s, "address already in use") || strings.Contains(s, "conflict with")
}

// freePort asks the kernel for a port free on the host right now. The
// engine runs in the host's network namespace, so its listener probes the
// same ports rootlesskit's parent will bind.
func freePort(proto, ip string) (uint16, error) {
	addr := net.JoinHostPort(ip, "0")
	if strings.HasPrefix(proto, "udp") {
		c, err := net.ListenPacket(proto, addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return uint16(c.LocalAddr().(*net.UDPAddr).Port), nil
	}
	l, err := net.Listen(proto, addr)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port), nil
}

// Unpublish implements engine/network.Driver.
func (d *Driver) Unpublish(ctx context.Context, f enet.Forward) error {
	if d.ports == nil {
		return nil
	}
	err := d.ports.PortManager().RemovePort(ctx, f.ID)
	if err != nil && strings.Contains(err.Error(), "unknown id") {
		return nil
	}
	return err
}

// Forwards implements engine/network.Driver: the port driver's parent
// side (hutch-ns) keeps its forwards as long as it runs, which with live
// restore is longer than an engine.
func (d *Driver) Forwards(ctx context.Context) ([]enet.Forward, error) {
	if d.ports == nil {
		return nil, nil
	}
	sts, err := d.ports.PortManager().ListPorts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]enet.Forward, 0, len(sts))
	for _, st := range sts {
		f := enet.Forward{
			ID:        st.ID,
			Proto:     strings.TrimRight(st.Spec.Proto, "46"),
			HostPort:  uint16(st.Spec.ParentPort),
			ChildPort: uint16(st.Spec.ChildPort),
		}
		f.HostPortEnd = f.HostPort
		if a, err := netip.ParseAddr(st.Spec.ParentIP); err == nil {
			f.HostIP = a.Unmap()
		}
		if a, err := netip.ParseAddr(st.Spec.ChildIP); err == nil {
			f.ChildIP = a.Unmap()
		}
		f.DualStack = !f.HostIP.IsValid() && d.ipv6
		out = append(out, f)
	}
	return out, nil
}
