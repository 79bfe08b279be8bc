package network

import (
	"cmp"
	"context"
	"slices"
)

// A container on several networks has one default route of each family,
// and chooses its networks as Docker's sandbox does (libnetwork's
// Endpoint.Less and getGatewayEndpoint): its endpoints sorted by
// gw-priority, highest first; at equal priority those that can carry
// both an IPv4 and an IPv6 default route before those that carry one,
// and those before internal networks, which carry none; then by network
// name. The IPv4 route goes through the first endpoint with an IPv4
// gateway, the IPv6 route through the first with an IPv6 one: they may
// be two networks. The network the container was created on has no
// privilege: a connect may take its routes, a disconnect give them to
// the next in the order.

// gatewaysLocked returns the networks that carry sb's IPv4 and IPv6
// default routes; nil where no endpoint can carry that family's.
func (m *Manager) gatewaysLocked(sb *sandbox) (gw4, gw6 *netState) {
	type cand struct {
		n      *netState
		prio   int
		v4, v6 bool
	}
	var cands []cand
	for _, nid := range sb.order {
		n := m.nets[nid]
		if n == nil {
			continue
		}
		ep := n.eps[sb.id]
		if ep == nil {
			continue
		}
		c := cand{n: n, prio: ep.GwPriority}
		if !n.Internal {
			c.v4, c.v6 = ep.IP.IsValid(), ep.IP6.IsValid()
		}
		cands = append(cands, c)
	}
	count := func(c cand) int {
		k := 0
		for _, b := range []bool{c.v4, c.v6} {
			if b {
				k++
			}
		}
		return k
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(
			cmp.Compare(b.prio, a.prio),
			cmp.Compare(count(b), count(a)),
			cmp.Compare(a.n.Name, b.n.Name),
		)
	})
	for _, c := range cands {
		if c.v4 && gw4 == nil {
			gw4 = c.n
		}
		if c.v6 && gw6 == nil {
			gw6 = c.n
		}
	}
	return gw4, gw6
}

// routeOf is the default route of one family through n's endpoint of sb.
func routeOf(sb *sandbox, n *netState, v6 bool) Gateway {
	if n == nil || n.eps[sb.id] == nil {
		return Gateway{}
	}
	via := n.Gateway
	if v6 {
		via = n.Gateway6
	}
	return Gateway{IfName: n.eps[sb.id].IfName, Via: via}
}

// rerouteLocked moves sb's default routes where gatewaysLocked says, when
// that is not where they were (before4, before6): after a disconnect
// took the network that carried them.
func (m *Manager) rerouteLocked(ctx context.Context, sb *sandbox, before4, before6 *netState) error {
	gw4, gw6 := m.gatewaysLocked(sb)
	if gw4 == before4 && gw6 == before6 {
		return nil
	}
	return m.drv.Reroute(ctx, sb.path, routeOf(sb, gw4, false), routeOf(sb, gw6, true))
}
