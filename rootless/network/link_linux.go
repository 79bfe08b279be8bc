package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// SetupNetwork implements engine/network.Driver: the bridge with the
// gateway addresses, up, and the network's NAT and isolation rules.
func (d *Driver) SetupNetwork(ctx context.Context, n *enet.Network) error {
	if n.Bridge == "" || (!n.IPv4() && !n.IPv6()) {
		return fmt.Errorf("network %s has no bridge or subnet", n.Name)
	}
	d.netMu.Lock()
	defer d.netMu.Unlock()
	return d.ns.do(func() error {
		br, err := d.link.LinkByName(n.Bridge)
		if err != nil {
			if !isNotFound(err) {
				return err
			}
			attrs := netlink.NewLinkAttrs()
			attrs.Name = n.Bridge
			attrs.MTU = enet.MTU
			// A fixed MAC: a bridge otherwise takes its lowest port's,
			// which changes as containers come and go, and the containers'
			// neighbour caches would point at a gateway that moved.
			attrs.HardwareAddr = bridgeMAC(n)
			if err := d.link.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
				return fmt.Errorf("creating bridge %s: %w", n.Bridge, err)
			}
			if br, err = d.link.LinkByName(n.Bridge); err != nil {
				return err
			}
		}
		if n.IPv4() {
			addr := &netlink.Addr{IPNet: ipNet(n.Gateway, n.Subnet.Bits())}
			if err := d.link.AddrReplace(br, addr); err != nil {
				return fmt.Errorf("address %s on %s: %w", addr.IPNet, n.Bridge, err)
			}
		}
		if n.IPv6() {
			// The bridge answers its containers at the IPv6 gateway and
			// the embedded DNS server of an IPv6-only network listens
			// there: IPv6 on, and the address usable at once.
			if err := enableIPv6(n.Bridge); err != nil {
				return err
			}
			addr := &netlink.Addr{IPNet: ipNet(n.Gateway6, n.Subnet6.Bits()), Flags: unix.IFA_F_NODAD}
			if err := d.link.AddrReplace(br, addr); err != nil {
				return fmt.Errorf("address %s on %s: %w", addr.IPNet, n.Bridge, err)
			}
		}
		if err := d.link.LinkSetUp(br); err != nil {
			return err
		}
		if d.nat != nil {
			if err := d.nat.add(n); err != nil {
				return fmt.Errorf("nftables rules of %s: %w", n.Name, err)
			}
		}
		return nil
	})
}

// TeardownNetwork implements engine/network.Driver.
func (d *Driver) TeardownNetwork(ctx context.Context, n *enet.Network) error {
	d.netMu.Lock()
	defer d.netMu.Unlock()
	return d.ns.do(func() error {
		var errs []error
		if d.nat != nil {
			errs = append(errs, d.nat.remove(n.ID))
		}
		if br, err := d.link.LinkByName(n.Bridge); err == nil {
			errs = append(errs, d.link.LinkDel(br))
		} else if !isNotFound(err) {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

// Plug implements engine/network.Driver. The veth is created with its
// container end already in the container's namespace and named there, so
// no interface ever shows up in the detached namespace under a name
// another container could want.
func (d *Driver) Plug(ctx context.Context, path string, n *enet.Network, ep *enet.Endpoint, routes enet.Routes) error {
	return d.ns.do(func() error {
		sb, err := netns.GetFromPath(path)
		if err != nil {
			return err
		}
		defer sb.Close()
		br, err := d.link.LinkByName(n.Bridge)
		if err != nil {
			return fmt.Errorf("bridge %s: %w", n.Bridge, err)
		}
		if old, err := d.link.LinkByName(ep.HostIf); err == nil {
			d.link.LinkDel(old) // a leftover of a failed start
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = ep.HostIf
		attrs.MTU = enet.MTU
		attrs.MasterIndex = br.Attrs().Index
		// One queue each way, asked for: a veth gets a queue per CPU
		// unless told, and the kernel then cuts both ends to one with a
		// synchronize_net each, an expedited RCU grace period under the
		// rtnl lock. Under concurrent starts those waited behind every
		// other grace period asked for (unmounts, namespaces torn
		// down): 120 ms a veth in a burst of 10 clients.
		attrs.NumTxQueues, attrs.NumRxQueues = 1, 1
		veth := &netlink.Veth{
			LinkAttrs:        attrs,
			PeerName:         ep.IfName,
			PeerHardwareAddr: ep.MAC,
			PeerNamespace:    netlink.NsFd(sb),
			PeerMTU:          enet.MTU,
		}
		if err := d.link.LinkAdd(veth); err != nil {
			return fmt.Errorf("creating veth %s: %w", ep.HostIf, err)
		}
		ok := false
		defer func() {
			if !ok {
				if l, err := d.link.LinkByName(ep.HostIf); err == nil {
					d.link.LinkDel(l)
				}
			}
		}()
		host, err := d.link.LinkByName(ep.HostIf)
		if err != nil {
			return err
		}
		if err := disableIPv6(ep.HostIf); err != nil {
			return err
		}
		if err := d.link.LinkSetUp(host); err != nil {
			return err
		}
		if ep.IP6.IsValid() {
			if err := d.inNS(sb, func() error { return ipv6Inside(ep.IfName) }); err != nil {
				return err
			}
		}
		if len(ep.Sysctls) > 0 {
			if err := d.inNS(sb, func() error { return ifaceSysctls(ep.IfName, ep.Sysctls) }); err != nil {
				return err
			}
		}
		// A handle in the container's namespace; NewHandleAt comes back
		// to this thread's namespace, the detached one, which it may.
		h, err := netlink.NewHandleAt(sb)
		if err != nil {
			return err
		}
		defer h.Close()
		if err := configureInside(h, n, ep, routes); err != nil {
			return err
		}
		ok = true
		return nil
	})
}

func configureInside(h *netlink.Handle, n *enet.Network, ep *enet.Endpoint, routes enet.Routes) error {
	eth, err := h.LinkByName(ep.IfName)
	if err != nil {
		return err
	}
	if ep.IP.IsValid() {
		if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(ep.IP, n.Subnet.Bits())}); err != nil {
			return fmt.Errorf("address %s on %s: %w", ep.IP, ep.IfName, err)
		}
	}
	if err := h.LinkSetUp(eth); err != nil {
		return err
	}
	if ep.IP6.IsValid() {
		// Added on the interface up, so that its prefix route is live
		// for the default route's gateway; without duplicate address
		// detection, so that it is not "tentative", unusable, for the
		// first second of the container (Docker's choice too: the
		// addresses of a bridge network are the IPAM's to give).
		a := &netlink.Addr{IPNet: ipNet(ep.IP6, n.Subnet6.Bits()), Flags: unix.IFA_F_NODAD}
		if err := h.AddrAdd(eth, a); err != nil {
			return fmt.Errorf("address %s on %s: %w", ep.IP6, ep.IfName, err)
		}
	}
	if routes.V4 {
		if err := setDefault(h, netlink.FAMILY_V4, eth.Attrs().Index, n.Gateway); err != nil {
			return err
		}
	}
	if routes.V6 {
		if err := setDefault(h, netlink.FAMILY_V6, eth.Attrs().Index, n.Gateway6); err != nil {
			return err
		}
	}
	return nil
}

// setDefault makes the default route of a family go through the link at
// index to via, and no other: the one it replaces may be through another
// interface (a network of higher gw-priority connected), which a replace
// alone would leave beside it on IPv6.
func setDefault(h *netlink.Handle, family, index int, via netip.Addr) error {
	if err := delDefaults(h, family, func(r netlink.Route) bool {
		return r.LinkIndex != index || !r.Gw.Equal(net.IP(via.AsSlice()))
	}); err != nil {
		return err
	}
	route := &netlink.Route{LinkIndex: index, Gw: net.IP(via.AsSlice()), Scope: netlink.SCOPE_UNIVERSE}
	if err := h.RouteReplace(route); err != nil {
		return fmt.Errorf("default route via %s: %w", via, err)
	}
	return nil
}

// delDefaults deletes the default routes of a family in the main table
// that match del.
func delDefaults(h *netlink.Handle, family int, del func(netlink.Route) bool) error {
	rs, err := h.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range rs {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		if del(r) {
			if err := h.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("deleting default route via %s: %w", r.Gw, err)
			}
		}
	}
	return nil
}

// Reroute implements engine/network.Driver.
func (d *Driver) Reroute(ctx context.Context, path string, gw4, gw6 enet.Gateway) error {
	return d.ns.do(func() error {
		sb, err := netns.GetFromPath(path)
		if err != nil {
			return err
		}
		defer sb.Close()
		h, err := netlink.NewHandleAt(sb)
		if err != nil {
			return err
		}
		defer h.Close()
		for _, r := range []struct {
			family int
			gw     enet.Gateway
		}{{netlink.FAMILY_V4, gw4}, {netlink.FAMILY_V6, gw6}} {
			if r.gw.IfName == "" {
				if err := delDefaults(h, r.family, func(netlink.Route) bool { return true }); err != nil {
					return err
				}
				continue
			}
			l, err := h.LinkByName(r.gw.IfName)
			if err != nil {
				return err
			}
			if err := setDefault(h, r.family, l.Attrs().Index, r.gw.Via); err != nil {
				return err
			}
		}
		return nil
	})
}

// Unplug implements engine/network.Driver: deleting the bridge end deletes
// the pair.
func (d *Driver) Unplug(ctx context.Context, ep *enet.Endpoint) error {
	return d.ns.do(func() error {
		l, err := d.link.LinkByName(ep.HostIf)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		if err := d.link.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("deleting veth %s: %w", ep.HostIf, err)
		}
		return nil
	})
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

func ipNet(ip netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(bits, ip.BitLen())}
}

// bridgeMAC is the bridge's fixed, locally administered MAC. Containers'
// MACs are 02:42 and their address (the last four bytes of the IPv6 one
// on an IPv6-only network); the gateway address is never a container's,
// so 02:42 and the gateway cannot collide with one.
func bridgeMAC(n *enet.Network) net.HardwareAddr {
	gw := n.Gateway
	if !n.IPv4() {
		gw = n.Gateway6
	}
	b := gw.AsSlice()
	b = b[len(b)-4:]
	return net.HardwareAddr{0x02, 0x42, b[0], b[1], b[2], b[3]}
}
