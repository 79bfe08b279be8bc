package network

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/network"
)

// Driver options that enable an address family when the request's
// EnableIPv4 and EnableIPv6 leave it unsaid (Docker's netlabel names).
const (
	optEnableIPv4 = "com.docker.network.enable_ipv4"
	optEnableIPv6 = "com.docker.network.enable_ipv6"
)

// checkCreate validates a create request and returns the network it
// describes, without the subnets the user gave none of: v6 says the
// network has IPv6 all the same, with a subnet from the pools. Errors
// are classed; the messages are Docker's where it has one.
func checkCreate(req network.CreateRequest) (n *Network, v6 bool, err error) {
	if strings.TrimSpace(req.Name) == "" {
		return nil, false, errdefs.ErrInvalidArgument.WithMessage("network name cannot be empty")
	}
	if strings.ContainsAny(req.Name, "/:") || strings.ContainsFunc(req.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, false, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid network name %q: it may not contain '/', ':' or control characters", req.Name))
	}
	switch req.Driver {
	case "", driverBridge:
	case driverHost, driverNull:
		return nil, false, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("only one instance of %q network is allowed", req.Driver))
	default:
		return nil, false, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("network driver %q is not supported: hutch makes bridge networks", req.Driver))
	}
	switch {
	case req.Scope != "" && req.Scope != "local":
		return nil, false, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("network scope %q is not supported: hutch's networks are local", req.Scope))
	case req.Ingress, req.ConfigOnly, req.ConfigFrom != nil && req.ConfigFrom.Network != "":
		return nil, false, errdefs.ErrNotImplemented.WithMessage("ingress and config-only networks are swarm features, which hutch does not have")
	}
	n = &Network{Name: req.Name, Driver: driverBridge, Internal: req.Internal, Attachable: req.Attachable,
		Labels: maps.Clone(req.Labels), Options: maps.Clone(req.Options)}
	v4, err := enabled(req.EnableIPv4, n.Options, optEnableIPv4, true)
	if err != nil {
		return nil, false, err
	}
	if v6, err = enabled(req.EnableIPv6, n.Options, optEnableIPv6, false); err != nil {
		return nil, false, err
	}
	if !v4 && !v6 {
		return nil, false, errdefs.ErrInvalidArgument.WithMessage("IPv4 or IPv6 must be enabled")
	}
	n.NoIPv4 = !v4
	if req.IPAM == nil {
		return n, v6, nil
	}
	if d := req.IPAM.Driver; d != "" && d != "default" {
		return nil, false, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("IPAM driver %q is not supported", d))
	}
	// As Docker, the configs of a family the network does not have are
	// ignored: a --subnet fd00::/64 without --ipv6 makes an IPv4 network.
	var cfg4, cfg6 []network.IPAMConfig
	for _, c := range req.IPAM.Config {
		switch {
		case !c.Subnet.IsValid() && (c.Gateway.IsValid() || c.IPRange.IsValid()):
			return nil, false, errdefs.ErrInvalidArgument.WithMessage("invalid pool request: a gateway or an ip-range needs a subnet")
		case len(c.AuxAddress) > 0:
			return nil, false, errdefs.ErrNotImplemented.WithMessage("auxiliary addresses are not supported")
		case !c.Subnet.IsValid():
		case c.Subnet.Addr().Is6() && !c.Subnet.Addr().Is4In6():
			if v6 {
				cfg6 = append(cfg6, c)
			}
		case v4:
			cfg4 = append(cfg4, c)
		}
	}
	if len(cfg4) > 1 || len(cfg6) > 1 {
		return nil, false, errdefs.ErrNotImplemented.WithMessage("a network with more than one subnet of a family (IPv4 or IPv6) is not supported")
	}
	if len(cfg4) == 1 {
		if n.Subnet, n.Gateway, n.IPRange, err = checkPoolConfig(cfg4[0]); err != nil {
			return nil, false, err
		}
	}
	if len(cfg6) == 1 {
		if n.Subnet6, n.Gateway6, n.IPRange6, err = checkPoolConfig(cfg6[0]); err != nil {
			return nil, false, err
		}
	}
	return n, v6, nil
}

// enabled settles whether an address family is on: the request's flag
// when it has one (the driver option of the same meaning is then dropped,
// so that inspect does not show a value that lost), else the driver
// option, else def.
func enabled(flag *bool, opts map[string]string, opt string, def bool) (bool, error) {
	if flag != nil {
		delete(opts, opt)
		return *flag, nil
	}
	v, ok := opts[opt]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("driver-opt %q is not a valid bool", opt))
	}
	return b, nil
}

// checkPoolConfig validates the IPAM config of one family and returns
// its subnet, gateway (the subnet's first host address unless given) and
// ip-range.
func checkPoolConfig(c network.IPAMConfig) (subnet netip.Prefix, gw netip.Addr, rng netip.Prefix, err error) {
	s := c.Subnet
	is6 := s.Addr().Is6()
	family, maxBits := 4, 30
	if is6 {
		family, maxBits = 6, 126
	}
	invalid := func(format string, a ...any) (netip.Prefix, netip.Addr, netip.Prefix, error) {
		return netip.Prefix{}, netip.Addr{}, netip.Prefix{}, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(format, a...))
	}
	if s != s.Masked() {
		return invalid("invalid subnet %s : it should be %s", s, s.Masked())
	}
	if s.Bits() > maxBits {
		return invalid("invalid subnet %s: it has no room for containers", s)
	}
	gw = firstHost(s)
	if c.Gateway.IsValid() {
		g := c.Gateway.Unmap()
		if g.Is6() != is6 {
			return invalid("invalid gateway %s: parent subnet is an IPv%d block", g, family)
		}
		if !s.Contains(g) || g == s.Addr() || (!is6 && g == broadcast(s)) {
			return invalid("invalid gateway address %s: it is not a host address of subnet %s", g, s)
		}
		gw = g
	}
	if r := c.IPRange; r.IsValid() {
		if r.Addr().Is6() != is6 {
			return invalid("invalid ip-range %s: parent subnet is an IPv%d block", r, family)
		}
		if r != r.Masked() || r.Bits() < s.Bits() || !s.Contains(r.Addr()) {
			return invalid("invalid ip-range %s: it must be a network inside subnet %s", r, s)
		}
		rng = r
	}
	return s, gw, rng, nil
}

// NetworkCreate implements networking.Service.
func (m *Manager) NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	n, v6, err := checkCreate(req)
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
		for _, s := range []netip.Prefix{o.Subnet, o.Subnet6} {
			if s.IsValid() {
				used = append(used, s)
			}
		}
	}
	for _, fam := range []struct {
		want    bool
		v6      bool
		subnet  *netip.Prefix
		gateway *netip.Addr
	}{{!n.NoIPv4, false, &n.Subnet, &n.Gateway}, {v6, true, &n.Subnet6, &n.Gateway6}} {
		switch {
		case !fam.want:
		case fam.subnet.IsValid():
			if overlapsAny(*fam.subnet, used) {
				return network.CreateResponse{}, errdefs.ErrPermissionDenied.WithMessage("invalid pool request: Pool overlaps with other one on this address space")
			}
		default:
			s, err := chooseSubnet(m.pools, append(slices.Clone(used), reserved...), fam.v6)
			if err != nil {
				return network.CreateResponse{}, err
			}
			*fam.subnet, *fam.gateway = s, firstHost(s)
		}
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

// NetworkInspect implements networking.Service.
func (m *Manager) NetworkInspect(ctx context.Context, ref string) (network.Inspect, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.find(ref)
	if err != nil {
		return network.Inspect{}, err
	}
	out := network.Inspect{Network: n.summary().Network, Containers: map[string]network.EndpointResource{}}
	for id, ep := range n.eps {
		r := network.EndpointResource{
			Name:       ep.Name,
			EndpointID: ep.ID,
			MacAddress: network.HardwareAddr(slices.Clone(ep.MAC)),
		}
		if ep.IP.IsValid() {
			r.IPv4Address = netip.PrefixFrom(ep.IP, n.Subnet.Bits())
		}
		if ep.IP6.IsValid() {
			r.IPv6Address = netip.PrefixFrom(ep.IP6, n.Subnet6.Bits())
		}
		out.Containers[id] = r
	}
	subnets := network.SubnetStatuses{}
	for _, p := range []*pool{n.pool, n.pool6} {
		if p != nil {
			subnets[p.subnet] = p.status()
		}
	}
	out.Status = &network.Status{IPAM: network.IPAMStatus{Subnets: subnets}}
	return out, nil
}

// listKeys are the filters docker network ls accepts.
var listKeys = map[string]bool{"dangling": true, "driver": true, "id": true, "label": true, "name": true, "scope": true, "type": true}

// NetworkList implements networking.Service, sorted by name.
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

// NetworkRemove implements networking.Service. Predefined networks and
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

// NetworkPrune implements networking.Service: user networks without running
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
