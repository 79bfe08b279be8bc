package network

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/network"
)

// forgetEndpointLocked drops container id's endpoint on n: its
// addresses, and n from the order of sb (nil when the container has no
// sandbox).
func forgetEndpointLocked(sb *sandbox, n *netState, id string) {
	n.releaseLocked(n.eps[id])
	delete(n.eps, id)
	if sb != nil {
		sb.order = slices.DeleteFunc(sb.order, func(nid string) bool { return nid == n.ID })
	}
}

// releaseLocked gives ep's addresses back to n's pools.
func (n *netState) releaseLocked(ep *Endpoint) {
	n.pool.release(ep.IP)
	n.pool6.release(ep.IP6)
}

// addressLocked gives ep its address on each of n's families: the one
// cfg asks for (--ip, --ip6), else the next free one.
func (n *netState) addressLocked(ep *Endpoint, cfg *network.EndpointSettings) error {
	want4, want6 := staticAddrs(cfg)
	if n.pool != nil {
		var err error
		if want4.IsValid() {
			ep.IP, err = want4, n.pool.reserve(want4, ep.ContainerID)
		} else {
			ep.IP, err = n.pool.allocate(ep.ContainerID)
		}
		if err != nil {
			ep.IP = netip.Addr{}
			return err
		}
	}
	if n.pool6 != nil {
		var err error
		if want6.IsValid() {
			ep.IP6, err = want6, n.pool6.reserve(want6, ep.ContainerID)
		} else {
			ep.IP6, err = n.pool6.allocate(ep.ContainerID)
		}
		if err != nil {
			n.pool.release(ep.IP)
			ep.IP, ep.IP6 = netip.Addr{}, netip.Addr{}
			return err
		}
	}
	return nil
}

// restoreLocked gives ep back the addresses a running container had on n
// before the daemon restarted: those of n's families.
func (n *netState) restoreLocked(ep *Endpoint, ip, ip6 netip.Addr) error {
	if n.pool != nil && ip.IsValid() {
		if err := n.pool.reserve(ip, ep.ContainerID); err != nil {
			return err
		}
		ep.IP = ip
	}
	if n.pool6 != nil && ip6.IsValid() {
		if err := n.pool6.reserve(ip6, ep.ContainerID); err != nil {
			n.pool.release(ep.IP)
			return err
		}
		ep.IP6 = ip6
	}
	if !ep.IP.IsValid() && !ep.IP6.IsValid() {
		return fmt.Errorf("no address of the network's families (%s, %s)", ip, ip6)
	}
	return nil
}

// reserveLocked sets n up if need be and gives the container its endpoint
// there (addresses, MAC, names, interface), not yet plugged.
func (m *Manager) reserveLocked(ctx context.Context, sb *sandbox, n *netState, c *container.Container, cfg *network.EndpointSettings) (*Endpoint, error) {
	if !n.IsBridge() {
		return nil, errdefs.ErrInvalidArgument.WithMessage("container cannot be disconnected from host network or connected to host network")
	}
	if _, dup := n.eps[c.ID]; dup {
		return nil, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("endpoint with name %s already exists in network %s", strings.TrimPrefix(c.Name, "/"), n.Name))
	}
	if err := m.setupLocked(ctx, n); err != nil {
		return nil, err
	}
	ifname, err := m.ifnameLocked(sb, c, cfg)
	if err != nil {
		return nil, err
	}
	sysctls, err := endpointSysctls(cfg)
	if err != nil {
		return nil, err
	}
	ep := &Endpoint{ID: newID(), ContainerID: c.ID, Name: strings.TrimPrefix(c.Name, "/"), IfName: ifname, Sysctls: sysctls}
	ep.HostIf = hostIfName(ep.ID)
	if err := n.addressLocked(ep, cfg); err != nil {
		return nil, err
	}
	if ep.IP.IsValid() {
		ep.MAC = macFor(ep.IP)
	} else {
		ep.MAC = macFor(ep.IP6)
	}
	if cfg != nil && len(cfg.MacAddress) == 6 {
		ep.MAC = slices.Clone([]byte(cfg.MacAddress))
	}
	if cfg != nil {
		ep.Aliases = slices.Clone(cfg.Aliases)
		ep.Links = slices.Clone(cfg.Links)
		ep.GwPriority = cfg.GwPriority
	}
	if n.UserDefined() {
		ep.DNSNames = dnsNames(c, ep.Aliases)
	}
	n.eps[c.ID] = ep
	sb.order = append(sb.order, n.ID)
	return ep, nil
}

// dnsNames are the names an endpoint answers to on a user network, in
// Docker's order: name, aliases, short ID, hostname.
func dnsNames(c *container.Container, aliases []string) []string {
	var out []string
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(strings.TrimPrefix(c.Name, "/"))
	for _, a := range aliases {
		add(a)
	}
	add(container.ShortID(c.ID))
	if c.Config != nil {
		add(c.Config.Hostname)
	}
	return out
}

// endpointSettings is an endpoint as inspect shows it: the addresses,
// prefix lengths and gateways of the families it has.
func endpointSettings(n *netState, ep *Endpoint, cfg *network.EndpointSettings) *network.EndpointSettings {
	out := configOnly(n.ID, cfg)
	out.EndpointID = ep.ID
	if ep.IP.IsValid() {
		out.Gateway = n.Gateway
		out.IPAddress = ep.IP
		out.IPPrefixLen = n.Subnet.Bits()
	}
	if ep.IP6.IsValid() {
		out.IPv6Gateway = n.Gateway6
		out.GlobalIPv6Address = ep.IP6
		out.GlobalIPv6PrefixLen = n.Subnet6.Bits()
	}
	out.MacAddress = network.HardwareAddr(slices.Clone(ep.MAC))
	out.DNSNames = slices.Clone(ep.DNSNames)
	return out
}
