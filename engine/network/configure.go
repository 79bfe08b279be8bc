package network

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// primaryNetwork is the network a mode names ("" and "default": bridge).
func primaryNetwork(mode containertypes.NetworkMode) string {
	switch m := string(mode); m {
	case "", network.NetworkDefault:
		return BridgeName
	default:
		return m
	}
}

// Configure implements networking.Service.
func (m *Manager) Configure(ctx context.Context, c *container.Container, nc *network.NetworkingConfig) (*containertypes.NetworkSettings, error) {
	hc := c.HostConfig
	if hc.NetworkMode == "" || hc.NetworkMode == network.NetworkDefault {
		hc.NetworkMode = BridgeName
	}
	mode := hc.NetworkMode
	var eps map[string]*network.EndpointSettings
	if nc != nil {
		eps = nc.EndpointsConfig
	}
	if _, err := planPorts(c.Config, hc); err != nil {
		return nil, err
	}
	out := &containertypes.NetworkSettings{Networks: map[string]*network.EndpointSettings{}}
	if mode.IsContainer() {
		// The engine refused the rest at create (validateNetMode).
		if len(eps) > 0 {
			return nil, errdefs.ErrInvalidArgument.WithMessage("conflicting options: container type network can't be used with other networks")
		}
		return out, nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	// As Docker, a network need not exist yet when the container is made
	// on it: the start connects the container to the networks its record
	// names, and fails on one that is still missing. One that exists has
	// the endpoint's settings checked against it now.
	primaryName := primaryNetwork(mode)
	primary, err := m.findAtCreate(primaryName)
	if err != nil {
		return nil, err
	}
	if primary != nil {
		primaryName = primary.Name
	}
	if primary != nil && !primary.IsBridge() {
		// host and none: the container has no interface of its own to
		// put on another network.
		names := []string{primaryName}
		for ref := range eps {
			if n, _ := m.findAtCreate(ref); n == nil || n.ID != primary.ID {
				names = append(names, ref)
			}
		}
		if len(names) > 1 {
			slices.Sort(names)
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Container cannot be connected to network endpoints: %s", strings.Join(names, ", ")))
		}
	}
	for ref, cfg := range eps {
		n, err := m.findAtCreate(ref)
		if err != nil {
			return nil, err
		}
		if n == nil {
			out.Networks[ref] = configOnly("", cfg)
			continue
		}
		if err := validateEndpoint(n, cfg); err != nil {
			return nil, err
		}
		out.Networks[n.Name] = configOnly(n.ID, cfg)
	}
	if out.Networks[primaryName] == nil {
		ep := &network.EndpointSettings{}
		if primary != nil {
			ep.NetworkID = primary.ID
		}
		out.Networks[primaryName] = ep
	}
	return out, nil
}

// findAtCreate is find for a create: a network that does not exist (yet)
// is nil, not an error.
func (m *Manager) findAtCreate(ref string) (*netState, error) {
	n, err := m.find(ref)
	if errdefs.IsNotFound(err) {
		return nil, nil
	}
	return n, err
}

// validateEndpoint checks an endpoint config against its network, with
// Docker's messages. As Docker, a static address may be asked for on any
// user network, one whose subnet came from the pools too.
func validateEndpoint(n *netState, cfg *network.EndpointSettings) error {
	if cfg == nil {
		return nil
	}
	if _, err := endpointSysctls(cfg); err != nil {
		return err
	}
	if name := askedIfname(cfg); name != "" {
		if err := checkIfname(name); err != nil {
			return err
		}
	}
	want4, want6 := staticAddrs(cfg)
	if !n.UserDefined() {
		if want4.IsValid() || want6.IsValid() {
			return errdefs.ErrInvalidArgument.WithMessage("user specified IP address is supported on user defined networks only")
		}
		if len(cfg.Aliases) > 0 {
			return errdefs.ErrInvalidArgument.WithMessage("network-scoped alias is supported only for containers in user defined networks")
		}
	}
	if want4.IsValid() && (!want4.Is4() || want4.IsUnspecified()) {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid IPv4 address: %s", want4))
	}
	if want6.IsValid() && (!want6.Is6() || want6.Is4In6() || want6.IsUnspecified() || want6.Zone() != "") {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid IPv6 address: %s", want6))
	}
	for _, c := range []struct {
		want netip.Addr
		p    *pool
	}{{want4, n.pool}, {want6, n.pool6}} {
		if c.want.IsValid() && (c.p == nil || !c.p.usable(c.want)) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("no configured subnet or ip-range contain the IP address %s", c.want))
		}
	}
	return nil
}

// staticAddrs are the addresses cfg asks for (IPAMConfig's IPv4Address
// and IPv6Address), an IPv4-mapped IPv6 address read as the IPv4 one.
func staticAddrs(cfg *network.EndpointSettings) (v4, v6 netip.Addr) {
	if cfg == nil || cfg.IPAMConfig == nil {
		return netip.Addr{}, netip.Addr{}
	}
	v4, v6 = cfg.IPAMConfig.IPv4Address, cfg.IPAMConfig.IPv6Address
	if v4.Is4In6() {
		v4 = v4.Unmap()
	}
	return v4, v6
}

// configOnly keeps the configuration part of an endpoint config, on the
// network of that ID ("" for one that does not exist yet).
func configOnly(networkID string, cfg *network.EndpointSettings) *network.EndpointSettings {
	out := &network.EndpointSettings{NetworkID: networkID}
	if cfg != nil {
		out.IPAMConfig = cfg.IPAMConfig.Copy()
		out.Links = slices.Clone(cfg.Links)
		out.Aliases = slices.Clone(cfg.Aliases)
		out.DriverOpts = cfg.DriverOpts
		out.GwPriority = cfg.GwPriority
		out.MacAddress = slices.Clone(cfg.MacAddress)
	}
	return out
}
