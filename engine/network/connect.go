package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/network"
)

// Connect implements networking.Service. A container whose namespace exists
// (it runs) gets its new interface at once; another one is configured for
// its next start.
func (m *Manager) Connect(ctx context.Context, c *container.Container, ref string, cfg *network.EndpointSettings) (string, *network.EndpointSettings, error) {
	mode := c.HostConfig.NetworkMode
	switch {
	case mode.IsContainer():
		return "", nil, errdefs.ErrInvalidArgument.WithMessage("container sharing network namespace with another container or host cannot be connected to any other network")
	case mode.IsHost():
		return "", nil, errdefs.ErrInvalidArgument.WithMessage("container cannot be disconnected from host network or connected to host network")
	case mode.IsNone():
		return "", nil, errdefs.ErrInvalidArgument.WithMessage("container cannot be connected to multiple networks with one of the networks in private (none) mode")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.find(ref)
	if err != nil {
		return "", nil, err
	}
	if !n.IsBridge() {
		return "", nil, errdefs.ErrInvalidArgument.WithMessage("container cannot be disconnected from host network or connected to host network")
	}
	if err := validateEndpoint(n, cfg); err != nil {
		return "", nil, err
	}
	name := strings.TrimPrefix(c.Name, "/")
	if _, ok := n.eps[c.ID]; ok {
		return "", nil, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("endpoint with name %s already exists in network %s", name, n.Name))
	}
	if c.NetworkSettings != nil && c.NetworkSettings.Networks[n.Name] != nil && c.NetworkSettings.Networks[n.Name].NetworkID == n.ID {
		return "", nil, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("endpoint with name %s already exists in network %s", name, n.Name))
	}
	sb := m.sandboxes[c.ID]
	if sb == nil || m.drv == nil {
		return n.Name, configOnly(n.ID, cfg), nil
	}
	ep, err := m.plugLocked(ctx, sb, n, c, cfg)
	if err != nil {
		return "", nil, err
	}
	return n.Name, endpointSettings(n, ep, cfg), nil
}

// Disconnect implements networking.Service. With force, a network that no
// longer exists is dropped from the container's record all the same.
func (m *Manager) Disconnect(ctx context.Context, c *container.Container, ref string, force bool) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.find(ref)
	if err != nil {
		if force && errdefs.IsNotFound(err) && c.NetworkSettings != nil && c.NetworkSettings.Networks[ref] != nil {
			return ref, nil
		}
		return "", err
	}
	mode := c.HostConfig.NetworkMode
	if !n.IsBridge() || mode.IsHost() || mode.IsContainer() {
		return "", errdefs.ErrInvalidArgument.WithMessage("container cannot be disconnected from host network or connected to host network")
	}
	ep := n.eps[c.ID]
	configured := c.NetworkSettings != nil && c.NetworkSettings.Networks[n.Name] != nil
	if ep == nil && !configured {
		return "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("container %s is not connected to network %s", c.ID, n.Name))
	}
	if ep != nil {
		sb := m.sandboxes[c.ID]
		var gw4, gw6 *netState
		if sb != nil {
			gw4, gw6 = m.gatewaysLocked(sb)
		}
		if err := m.drv.Unplug(ctx, ep); err != nil {
			return "", fmt.Errorf("disconnecting from network %s: %w", n.Name, err)
		}
		forgetEndpointLocked(sb, n, c.ID)
		if sb != nil && sb.path != "" {
			// As Docker, a failure to move the default routes is only
			// logged: the container is off the network all the same.
			if err := m.rerouteLocked(ctx, sb, gw4, gw6); err != nil {
				m.log.Warn("moving the default routes after a disconnect", "container", c.ID, "err", err)
			}
		}
	}
	return n.Name, nil
}

// Restore implements networking.Service: the running containers keep their
// addresses (their records say which), and the namespaces of all other
// containers, left by a daemon that died, are removed. A running
// container whose namespace is gone (without live restore, the rootless
// daemon's mount and network namespaces are new at each start) is
// returned in lost, its addresses free. With live restore the namespaces
// outlived the engine: the networks of the kept containers are set up
// again (their bridges are there; their DNS servers start), and the port
// forwards still in place go back to their containers (restoreForwards).
func (m *Manager) Restore(ctx context.Context, running []*container.Container) (lost []string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := map[string]bool{}
	for _, c := range running {
		ns := c.NetworkSettings
		if ns == nil || ns.SandboxKey == "" || m.drv == nil {
			keep[c.ID] = true
			continue
		}
		if !m.drv.SandboxLive(ctx, c.ID) {
			lost = append(lost, c.ID)
			continue
		}
		keep[c.ID] = true
		sb := &sandbox{id: c.ID, path: ns.SandboxKey, key: ns.SandboxID, dns: m.containerDNS(c)}
		m.sandboxes[c.ID] = sb
		names := make([]string, 0, len(ns.Networks))
		for name := range ns.Networks {
			names = append(names, name)
		}
		// In Attach's order: the network mode's first (eth0, and the
		// server resolv.conf names), then the others by name.
		slices.Sort(names)
		if p, err := m.find(primaryNetwork(c.HostConfig.NetworkMode)); err == nil {
			if i := slices.Index(names, p.Name); i > 0 {
				names = slices.Insert(slices.Delete(names, i, i+1), 0, p.Name)
			}
		}
		for _, name := range names {
			es := ns.Networks[name]
			if es == nil || (!es.IPAddress.IsValid() && !es.GlobalIPv6Address.IsValid()) || len(es.EndpointID) < 8 {
				continue
			}
			n, err := m.find(es.NetworkID)
			if err != nil || !n.IsBridge() {
				continue
			}
			ifname, err := m.ifnameLocked(sb, c, es)
			if err != nil {
				m.log.Warn("restoring an interface name", "container", c.ID, "network", n.Name, "err", err)
				continue
			}
			ep := &Endpoint{
				ID: es.EndpointID, ContainerID: c.ID, Name: strings.TrimPrefix(c.Name, "/"),
				MAC: net.HardwareAddr(es.MacAddress), Aliases: slices.Clone(es.Aliases), GwPriority: es.GwPriority,
				DNSNames: slices.Clone(es.DNSNames), Links: slices.Clone(es.Links), HostIf: hostIfName(es.EndpointID),
				IfName: ifname,
			}
			if err := n.restoreLocked(ep, es.IPAddress, es.GlobalIPv6Address); err != nil {
				m.log.Warn("restoring an address", "container", c.ID, "network", n.Name, "err", err)
				continue
			}
			n.eps[c.ID] = ep
			sb.order = append(sb.order, n.ID)
		}
	}
	if m.drv == nil {
		return lost, nil
	}
	for _, n := range m.nets {
		if len(n.eps) == 0 {
			continue
		}
		if err := m.setupLocked(ctx, n); err != nil {
			m.log.Warn("restoring a network", "network", n.Name, "err", err)
		}
	}
	m.restoreForwards(ctx)
	ids, err := m.drv.Sandboxes(ctx)
	if err != nil {
		return lost, fmt.Errorf("listing network namespaces: %w", err)
	}
	var removed int
	for _, id := range ids {
		if keep[id] {
			continue
		}
		if err := m.drv.RemoveSandbox(ctx, id); err != nil {
			m.log.Warn("removing a stale network namespace", "container", id, "err", err)
			continue
		}
		removed++
	}
	if removed > 0 {
		m.log.Info("removed stale network namespaces", "count", removed)
	}
	return lost, nil
}

// restoreForwards gives the forwards in place (an earlier engine's, kept
// with the namespaces) back to the restored sandboxes they lead to, and
// removes those that lead to no running container.
func (m *Manager) restoreForwards(ctx context.Context) {
	fws, err := m.drv.Forwards(ctx)
	if err != nil {
		m.log.Warn("listing the published ports in place", "err", err)
		return
	}
	owner := map[netip.Addr]*sandbox{}
	for _, n := range m.nets {
		for id, ep := range n.eps {
			if sb := m.sandboxes[id]; sb != nil {
				if ep.IP.IsValid() {
					owner[ep.IP] = sb
				}
				if ep.IP6.IsValid() {
					owner[ep.IP6] = sb
				}
			}
		}
	}
	for _, f := range fws {
		if sb := owner[f.ChildIP]; sb != nil {
			sb.forwards = append(sb.forwards, f)
			continue
		}
		if err := m.drv.Unpublish(ctx, f); err != nil {
			m.log.Warn("removing a stale port forward", "host-port", f.HostPort, "err", err)
		}
	}
}

// Close stops the DNS servers. The driver's state dies with the detached
// namespace.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.nets {
		if n.dns != nil {
			n.dns.stop()
			n.dns = nil
		}
	}
	return nil
}
