package network

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/network"
)

// checkCreate validates a create request and returns the network it
// describes, without subnet when the user gave none. Errors are classed;
// the messages are Docker's where it has one.
func checkCreate(req network.CreateRequest) (*Network, error) {
	if strings.TrimSpace(req.Name) == "" {
		return nil, errdefs.ErrInvalidArgument.WithMessage("network name cannot be empty")
	}
	if strings.ContainsAny(req.Name, "/:") || strings.ContainsFunc(req.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid network name %q: it may not contain '/', ':' or control characters", req.Name))
	}
	switch req.Driver {
	case "", driverBridge:
	case driverHost, driverNull:
		return nil, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("only one instance of %q network is allowed", req.Driver))
	default:
		return nil, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("network driver %q is not supported: hutch makes bridge networks", req.Driver))
	}
	switch {
	case req.Scope != "" && req.Scope != "local":
		return nil, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("network scope %q is not supported: hutch's networks are local", req.Scope))
	case req.Ingress, req.ConfigOnly, req.ConfigFrom != nil && req.ConfigFrom.Network != "":
		return nil, errdefs.ErrNotImplemented.WithMessage("ingress and config-only networks are swarm features, which hutch does not have")
	case req.EnableIPv6 != nil && *req.EnableIPv6:
		return nil, errdefs.ErrNotImplemented.WithMessage("IPv6 networks are not supported yet")
	case req.EnableIPv4 != nil && !*req.EnableIPv4:
		return nil, errdefs.ErrNotImplemented.WithMessage("networks without IPv4 are not supported")
	}
	n := &Network{Name: req.Name, Driver: driverBridge, Internal: req.Internal, Attachable: req.Attachable,
		Labels: maps.Clone(req.Labels), Options: maps.Clone(req.Options)}
	if req.IPAM == nil {
		return n, nil
	}
	if d := req.IPAM.Driver; d != "" && d != "default" {
		return nil, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("IPAM driver %q is not supported", d))
	}
	var v4 []network.IPAMConfig
	for _, c := range req.IPAM.Config {
		switch {
		case c.Subnet.IsValid() && c.Subnet.Addr().Is6():
			return nil, errdefs.ErrNotImplemented.WithMessage("IPv6 networks are not supported yet")
		case !c.Subnet.IsValid() && (c.Gateway.IsValid() || c.IPRange.IsValid()):
			return nil, errdefs.ErrInvalidArgument.WithMessage("invalid pool request: a gateway or an ip-range needs a subnet")
		case len(c.AuxAddress) > 0:
			return nil, errdefs.ErrNotImplemented.WithMessage("auxiliary addresses are not supported")
		}
		if c.Subnet.IsValid() {
			v4 = append(v4, c)
		}
	}
	if len(v4) > 1 {
		return nil, errdefs.ErrNotImplemented.WithMessage("a network with more than one IPv4 subnet is not supported")
	}
	if len(v4) == 0 {
		return n, nil
	}
	c := v4[0]
	s := c.Subnet
	if s != s.Masked() {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid subnet %s : it should be %s", s, s.Masked()))
	}
	if s.Bits() > 30 {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid subnet %s: it has no room for containers", s))
	}
	n.Subnet, n.UserSubnet = s, true
	n.Gateway = firstHost(s)
	if c.Gateway.IsValid() {
		g := c.Gateway.Unmap()
		if !s.Contains(g) || g == s.Addr() || g == broadcast(s) {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid gateway address %s: it is not a host address of subnet %s", g, s))
		}
		n.Gateway = g
	}
	if r := c.IPRange; r.IsValid() {
		if !r.Addr().Is4() || r != r.Masked() || r.Bits() < s.Bits() || !s.Contains(r.Addr()) {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid ip-range %s: it must be a network inside subnet %s", r, s))
		}
		n.IPRange = r
	}
	return n, nil
}

// NetworkCreate implements engine.Networks.
func (m *Manager) NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	n, err := checkCreate(req)
	if err != nil {
		return network.CreateResponse{}, err
	}
	reserved, err := m.reserved(ctx)
	if err != nil {
		return network.CreateResponse{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byName(n.Name) != nil {
		return network.CreateResponse{}, errdefs.ErrConflict.WithMessage(fmt.Sprintf("network with name %s already exists", n.Name))
	}
	var used []netip.Prefix
	for _, o := range m.nets {
		if o.Subnet.IsValid() {
			used = append(used, o.Subnet)
		}
	}
	if n.Subnet.IsValid() {
		if overlapsAny(n.Subnet, used) {
			return network.CreateResponse{}, errdefs.ErrPermissionDenied.WithMessage("invalid pool request: Pool overlaps with other one on this address space")
		}
	} else {
		s, err := chooseSubnet(m.pools, append(used, reserved...))
		if err != nil {
			return network.CreateResponse{}, err
		}
		n.Subnet, n.Gateway = s, firstHost(s)
	}
	n.ID = newID()
	n.Created = time.Now().UTC()
	n.Bridge = "br-" + n.ID[:12]
	if err := save(m.root, n); err != nil {
		return network.CreateResponse{}, fmt.Errorf("network %s: %w", n.Name, err)
	}
	m.add(n)
	return network.CreateResponse{ID: n.ID}, nil
}

// NetworkInspect implements engine.Networks.
func (m *Manager) NetworkInspect(ctx context.Context, ref string) (network.Inspect, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.find(ref)
	if err != nil {
		return network.Inspect{}, err
	}
	out := network.Inspect{Network: n.summary().Network, Containers: map[string]network.EndpointResource{}}
	for id, ep := range n.eps {
		out.Containers[id] = network.EndpointResource{
			Name:        ep.Name,
			EndpointID:  ep.ID,
			MacAddress:  network.HardwareAddr(slices.Clone(ep.MAC)),
			IPv4Address: netip.PrefixFrom(ep.IP, n.Subnet.Bits()),
		}
	}
	return out, nil
}

// listKeys are the filters docker network ls accepts.
var listKeys = map[string]bool{"dangling": true, "driver": true, "id": true, "label": true, "name": true, "scope": true, "type": true}

// NetworkList implements engine.Networks, sorted by name.
func (m *Manager) NetworkList(ctx context.Context, filters string) ([]network.Summary, error) {
	f, err := container.ParseFiltersOf(filters, listKeys)
	if err != nil {
		return nil, err
	}
	for _, t := range f.Values("type") {
		if t != "custom" && t != "builtin" {
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid filter: 'type'='%s'", t))
		}
	}
	dangling, err := f.Bool("dangling")
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []network.Summary{}
	for _, n := range m.nets {
		if !matchList(f, dangling, n) {
			continue
		}
		out = append(out, n.summary())
	}
	slices.SortFunc(out, func(a, b network.Summary) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func matchList(f container.Filters, dangling *bool, n *netState) bool {
	if vs := f.Values("name"); len(vs) > 0 && !container.MatchAny(vs, n.Name) {
		return false
	}
	if vs := f.Values("id"); len(vs) > 0 && !container.MatchAny(vs, n.ID) {
		return false
	}
	if vs := f.Values("driver"); len(vs) > 0 && !slices.Contains(vs, n.Driver) {
		return false
	}
	if vs := f.Values("scope"); len(vs) > 0 && !slices.Contains(vs, "local") {
		return false
	}
	if vs := f.Values("type"); len(vs) > 0 {
		t := "custom"
		if n.Predefined() {
			t = "builtin"
		}
		if !slices.Contains(vs, t) {
			return false
		}
	}
	if !container.MatchLabels(f.Values("label"), n.Labels) {
		return false
	}
	if dangling != nil {
		unused := !n.Predefined() && len(n.eps) == 0
		if unused != *dangling {
			return false
		}
	}
	return true
}

// NetworkRemove implements engine.Networks. Predefined networks and
// networks with running containers cannot be removed (403, as Docker).
func (m *Manager) NetworkRemove(ctx context.Context, ref string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.find(ref)
	if err != nil {
		return err
	}
	return m.removeLocked(ctx, n)
}

func (m *Manager) removeLocked(ctx context.Context, n *netState) error {
	if n.Predefined() {
		return errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("%s is a pre-defined network and cannot be removed", n.Name))
	}
	if len(n.eps) > 0 {
		var ids []string
		for id := range n.eps {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		ep := n.eps[ids[0]]
		return errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("error while removing network: network %s has active endpoints (name:%q id:%q)", n.Name, ep.Name, container.ShortID(ep.ContainerID)))
	}
	if n.dns != nil {
		n.dns.stop()
		n.dns = nil
	}
	if n.up {
		if err := m.drv.TeardownNetwork(ctx, n.Network); err != nil {
			m.log.Warn("removing a network's bridge", "network", n.Name, "err", err)
		}
		n.up = false
	}
	if err := remove(m.root, n.ID); err != nil {
		return fmt.Errorf("removing network %s: %w", n.Name, err)
	}
	delete(m.nets, n.ID)
	return nil
}

// NetworkPrune implements engine.Networks: user networks without running
// containers go.
func (m *Manager) NetworkPrune(ctx context.Context, filters string) (network.PruneReport, error) {
	f, err := container.ParseFiltersOf(filters, container.PruneKeys)
	if err != nil {
		return network.PruneReport{}, err
	}
	until, err := container.PruneUntil(f, time.Now())
	if err != nil {
		return network.PruneReport{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rep := network.PruneReport{NetworksDeleted: []string{}}
	ids := slices.Sorted(maps.Keys(m.nets))
	for _, id := range ids {
		n := m.nets[id]
		if n.Predefined() || len(n.eps) > 0 {
			continue
		}
		if !container.PruneLabels(f, n.Labels) {
			continue
		}
		if !until.IsZero() && !n.Created.Before(until) {
			continue
		}
		if err := m.removeLocked(ctx, n); err != nil {
			m.log.Warn("prune", "network", n.Name, "err", err)
			continue
		}
		rep.NetworksDeleted = append(rep.NetworksDeleted, n.Name)
	}
	return rep, nil
}
