package network

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/containerd/errdefs"
)

// Where the default bridge is follows the daemon's configuration at every
// start, as Docker makes its bridge anew from bip and the address pools:
// bip when set; without it, the subnet the bridge has while that is one of
// the pools', else the first free one. A move is made before any container
// is attached (New), so no endpoint keeps an old address; stopped
// containers get new ones at their start.

// bridgePlace returns the subnet and gateway the default bridge belongs
// at; cur is its record, nil when it is being made.
func (m *Manager) bridgePlace(ctx context.Context, cur *Network) (netip.Prefix, netip.Addr, error) {
	if !m.bip.IsValid() && cur != nil && cur.Subnet.IsValid() && inPools(m.pools, cur.Subnet) {
		return cur.Subnet, cur.Gateway, nil // no driver call at a start that moves nothing
	}
	reserved, err := m.reserved(ctx)
	if err != nil {
		return netip.Prefix{}, netip.Addr{}, err
	}
	if m.bip.IsValid() {
		s := m.bip.Masked()
		for _, r := range reserved {
			if r.Bits() > 0 && r.Overlaps(s) {
				return netip.Prefix{}, netip.Addr{}, fmt.Errorf("bip %s overlaps %s, a route of the daemon's network namespace: %w", m.bip, r, errdefs.ErrInvalidArgument)
			}
		}
		return s, m.bip.Addr(), nil
	}
	used := reserved
	for _, n := range m.nets {
		if n.Subnet.IsValid() && (cur == nil || n.ID != cur.ID) {
			used = append(used, n.Subnet)
		}
	}
	s, err := chooseSubnet(m.pools, used, false)
	return s, firstHost(s), err
}

// inPools reports whether p is one of the subnets pools hand out.
func inPools(pools []Pool, p netip.Prefix) bool {
	for _, pl := range pools {
		if p.Bits() == pl.Size && pl.Base.Bits() <= pl.Size && pl.Base.Masked().Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// moveBridge puts the recorded default bridge where the configuration
// says (bridgePlace), tearing down its old interface when the driver still
// has it (real root keeps bridges across daemon runs).
func (m *Manager) moveBridge(ctx context.Context) error {
	n := m.byName(BridgeName)
	if n == nil {
		return nil
	}
	subnet, gw, err := m.bridgePlace(ctx, n.Network)
	if err != nil {
		return err
	}
	if subnet == n.Subnet && gw == n.Gateway {
		return nil
	}
	if m.drv != nil {
		if err := m.drv.TeardownNetwork(ctx, n.Network); err != nil {
			m.log.Warn("removing the default bridge's old interface", "err", err)
		}
	}
	moved := *n.Network
	moved.Subnet, moved.Gateway, moved.IPRange = subnet, gw, netip.Prefix{}
	if err := save(m.root, &moved); err != nil {
		return fmt.Errorf("network %s: %w", BridgeName, err)
	}
	m.log.Info("the default bridge moved, as bip and default-address-pools say", "from", n.Subnet, "to", subnet, "gateway", gw)
	m.add(&moved)
	return nil
}
