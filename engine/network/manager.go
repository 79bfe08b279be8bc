package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
)

var _ networking.Service = (*Manager)(nil)

// Options configures a Manager.
type Options struct {
	// Root is where network records are kept, one JSON file each.
	Root string
	// Driver makes networks real; nil gives containers of bridge networks
	// a namespace with loopback only.
	Driver Driver
	Logger *slog.Logger
	// Pools are where networks without a subnet take one
	// (default-address-pools); nil is DefaultPools. Without an IPv6
	// pool, IPv6 subnets come from ULAPool(EngineID).
	Pools []Pool
	// EngineID is the engine's ID, stable across its starts, from which
	// its IPv6 pool is derived.
	EngineID string
	// BIP, when valid, is the default bridge's gateway address and subnet
	// (daemon.json's bip).
	BIP netip.Prefix
	// DNS are the servers of containers without --dns (daemon.json's
	// dns): the embedded DNS servers forward their queries there.
	DNS []netip.Addr
}

// Manager is the network model: records, address pools, the endpoints
// and published ports of running containers, and the DNS servers of user
// networks. One mutex guards it all; driver calls made under it are short
// (netlink messages, a forward added over a unix socket).
type Manager struct {
	root  string
	drv   Driver
	log   *slog.Logger
	pools []Pool
	bip   netip.Prefix
	dns   []netip.Addr

	mu        sync.RWMutex
	nets      map[string]*netState // by ID
	sandboxes map[string]*sandbox  // by container ID
}

// netState is a network with what it has while the daemon runs.
type netState struct {
	*Network
	// pool and pool6 hand out the IPv4 and IPv6 addresses; nil where
	// the network has not the family.
	pool, pool6 *pool
	eps         map[string]*Endpoint // by container ID
	// up: the driver set the network up in this daemon's run.
	up  bool
	dns *dnsServer
}

// sandbox is a running container's network namespace.
type sandbox struct {
	// key is the run's NetworkSettings.SandboxID.
	id, path, key string
	// order lists the network IDs the container is attached to, in the
	// order of its interfaces.
	order    []string
	forwards []Forward
	// dns are the servers the container's queries to the embedded DNS
	// servers are forwarded to: its --dns, else the daemon's
	// (containerDNS, dnsforward.go).
	dns []netip.Addr
}

// New loads the network records under o.Root and creates the predefined
// networks (bridge, host, none) on the first start.
func New(ctx context.Context, o Options) (*Manager, error) {
	m := &Manager{root: o.Root, drv: o.Driver, log: o.Logger, pools: o.Pools, bip: o.BIP, dns: o.DNS, nets: map[string]*netState{}, sandboxes: map[string]*sandbox{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.pools == nil {
		m.pools = DefaultPools
	}
	if !hasV6(m.pools) {
		m.pools = append(slices.Clone(m.pools), ULAPool(o.EngineID))
	}
	recs, skipped, err := load(o.Root)
	if err != nil {
		return nil, fmt.Errorf("network records: %w", err)
	}
	for _, err := range skipped {
		m.log.Warn("skipped a damaged network record", "err", err)
	}
	for _, n := range recs {
		m.add(n)
	}
	if err := m.moveBridge(ctx); err != nil {
		return nil, err
	}
	if err := m.ensurePredefined(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) add(n *Network) *netState {
	ns := &netState{Network: n, eps: map[string]*Endpoint{}}
	if n.Subnet.IsValid() {
		ns.pool = newPool(n.Subnet, n.IPRange, n.Gateway)
	}
	if n.Subnet6.IsValid() {
		ns.pool6 = newPool(n.Subnet6, n.IPRange6, n.Gateway6)
	}
	m.nets[n.ID] = ns
	return ns
}

// ensurePredefined makes the bridge, host and none networks unless they
// exist. The default bridge takes bip, or the first subnet of the pools
// the host's routes leave free (172.17.0.0/16 by default).
func (m *Manager) ensurePredefined(ctx context.Context) error {
	for _, name := range []string{BridgeName, HostName, NoneName} {
		if m.byName(name) != nil {
			continue
		}
		n := &Network{ID: newID(), Name: name, Created: time.Now().UTC()}
		switch name {
		case BridgeName:
			subnet, gw, err := m.bridgePlace(ctx, nil)
			if err != nil {
				return err
			}
			n.Driver, n.Subnet, n.Gateway, n.Bridge = driverBridge, subnet, gw, DefaultBridge
			n.Options = map[string]string{
				"com.docker.network.bridge.default_bridge":       "true",
				"com.docker.network.bridge.enable_icc":           "true",
				"com.docker.network.bridge.enable_ip_masquerade": "true",
				"com.docker.network.bridge.name":                 DefaultBridge,
				"com.docker.network.driver.mtu":                  fmt.Sprint(MTU),
			}
		case HostName:
			n.Driver = driverHost
		case NoneName:
			n.Driver = driverNull
		}
		if err := save(m.root, n); err != nil {
			return fmt.Errorf("network %s: %w", name, err)
		}
		m.add(n)
	}
	return nil
}

// reserved is what subnets must not overlap: the driver's prefixes.
func (m *Manager) reserved(ctx context.Context) ([]netip.Prefix, error) {
	if m.drv == nil {
		return nil, nil
	}
	return m.drv.Reserved(ctx)
}

func (m *Manager) byName(name string) *netState {
	for _, n := range m.nets {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// find resolves a network reference as Docker does: a full ID, then a
// name, then a unique ID prefix. "default" is the bridge network.
func (m *Manager) find(ref string) (*netState, error) {
	if ref == "" || ref == network.NetworkDefault {
		ref = BridgeName
	}
	if n := m.nets[ref]; n != nil {
		return n, nil
	}
	if n := m.byName(ref); n != nil {
		return n, nil
	}
	var found *netState
	for id, n := range m.nets {
		if strings.HasPrefix(id, ref) {
			if found != nil {
				return nil, fmt.Errorf("network %s is ambiguous (%d matches found based on ID prefix): %w", ref, 2, errdefs.ErrInvalidArgument)
			}
			found = n
		}
	}
	if found == nil {
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("network %s not found", ref))
	}
	return found, nil
}

// Attach implements networking.Service.
func (m *Manager) Attach(ctx context.Context, c *container.Container) (networking.Attachment, error) {
	mode := c.HostConfig.NetworkMode
	if mode.IsHost() || mode.IsNone() {
		m.mu.RLock()
		defer m.mu.RUnlock()
		n, err := m.find(string(mode))
		if err != nil {
			return networking.Attachment{}, err
		}
		settings := &containertypes.NetworkSettings{
			SandboxID: newID(),
			Ports:     network.PortMap{},
			Networks:  map[string]*network.EndpointSettings{n.Name: {NetworkID: n.ID, EndpointID: newID()}},
		}
		return networking.Attachment{Settings: settings}, nil
	}
	if m.drv == nil {
		return networking.Attachment{Settings: &containertypes.NetworkSettings{SandboxID: newID()}}, nil
	}
	plan, err := planPorts(c.Config, c.HostConfig)
	if err != nil {
		return networking.Attachment{}, err
	}
	start := time.Now()
	sb, plugs, err := m.reserveAll(ctx, c)
	if err != nil {
		return networking.Attachment{}, err
	}
	fail := func(err error) (networking.Attachment, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.sandboxes[c.ID] == sb {
			m.detachLocked(context.WithoutCancel(ctx), c.ID, false)
		}
		return networking.Attachment{}, err
	}
	// The namespace and its veths are made without the lock: they are this
	// container's alone, and the driver makes those of several containers
	// at once (one at a time, they were most of start/network under
	// concurrent starts).
	path, err := m.drv.NewSandbox(ctx, c.ID)
	if err != nil {
		return fail(fmt.Errorf("creating the network namespace: %w", err))
	}
	for _, p := range plugs {
		if err := m.drv.Plug(ctx, path, p.n.Network, p.ep, p.routes); err != nil {
			return fail(fmt.Errorf("connecting to network %s: %w", p.n.Name, err))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sandboxes[c.ID] != sb {
		// Detached meanwhile (the container went): the namespace made
		// after that detach is this start's to remove.
		if m.sandboxes[c.ID] == nil {
			m.drv.RemoveSandbox(context.WithoutCancel(ctx), c.ID)
		}
		return networking.Attachment{}, fmt.Errorf("the network of container %s was released while it started", c.ID)
	}
	sb.path = path
	settings := &containertypes.NetworkSettings{SandboxID: sb.key, SandboxKey: path, Ports: network.PortMap{}, Networks: map[string]*network.EndpointSettings{}}
	nets := make([]*netState, len(plugs))
	var addrs []netip.Addr
	for i, p := range plugs {
		nets[i] = p.n
		addrs = append(addrs, p.ep.Addrs()...)
		settings.Networks[p.n.Name] = endpointSettings(p.n, p.ep, p.cfg)
	}
	if err := m.publishLocked(ctx, sb, c, nets, plan, settings.Ports); err != nil {
		m.detachLocked(context.WithoutCancel(ctx), c.ID, false)
		return networking.Attachment{}, err
	}
	m.log.Debug("network attached", "container", c.ID, "took", time.Since(start))
	att := networking.Attachment{
		NetNSPath:   path,
		Settings:    settings,
		Addrs:       addrs,
		HostGateway: m.drv.HostGateway().String(),
	}
	att.DNS = m.resolver(nets)
	return att, nil
}

// resolver is the nameserver of a container on nets (in attach order).
func (m *Manager) resolver(nets []*netState) networking.DNS {
	if dnsNet := embeddedDNSNetwork(nets); dnsNet != nil {
		// As Docker: names are tried as they are first, the embedded
		// server answers the short ones.
		return networking.DNS{Nameservers: []string{dnsNet.dnsAddr().String()}, DNSOptions: []string{"ndots:0"}, EmbeddedDNS: true}
	}
	return networking.DNS{Nameservers: []string{m.drv.Nameserver().String()}}
}

// DNS implements networking.Service: the resolver of the networks the
// container's namespace is plugged in now, the first user network's
// embedded server when it has one, as at a start on them.
func (m *Manager) DNS(_ context.Context, id string) (networking.DNS, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sb := m.sandboxes[id]
	if sb == nil || sb.path == "" || m.drv == nil {
		return networking.DNS{}, false
	}
	nets := make([]*netState, 0, len(sb.order))
	for _, nid := range sb.order {
		if n := m.nets[nid]; n != nil {
			nets = append(nets, n)
		}
	}
	return m.resolver(nets), true
}

// embeddedDNSNetwork is the network whose embedded DNS server a container
// on nets (in attach order) asks: its first user-defined one. As in
// Docker, one user network is enough, even behind the default bridge
// (NetworkMode "" with an EndpointsConfig, as testcontainers creates), and
// that server answers the names of all the container's user networks.
func embeddedDNSNetwork(nets []*netState) *netState {
	for _, n := range nets {
		if n.UserDefined() {
			return n
		}
	}
	return nil
}

// plannedPlug is an endpoint reserved for a container, to be plugged.
type plannedPlug struct {
	n      *netState
	ep     *Endpoint
	cfg    *network.EndpointSettings
	routes Routes // the default routes that go through it
}

// reserveAll registers container c's sandbox and reserves its endpoint on
// each of its networks (setting the networks up where needed), under the
// lock; the driver's work on the container's own namespace comes after.
func (m *Manager) reserveAll(ctx context.Context, c *container.Container) (*sandbox, []plannedPlug, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sandboxes[c.ID] != nil {
		m.detachLocked(ctx, c.ID, false) // left by a start that did not finish
	}
	nets, err := m.attachOrder(c)
	if err != nil {
		return nil, nil, err
	}
	sb := &sandbox{id: c.ID, key: newID(), dns: m.containerDNS(c)}
	m.sandboxes[c.ID] = sb
	var plugs []plannedPlug
	for _, n := range nets {
		var cfg *network.EndpointSettings
		if c.NetworkSettings != nil {
			cfg = c.NetworkSettings.Networks[n.Name]
		}
		ep, err := m.reserveLocked(ctx, sb, n, c, cfg)
		if err != nil {
			m.detachLocked(context.WithoutCancel(ctx), c.ID, false)
			return nil, nil, err
		}
		plugs = append(plugs, plannedPlug{n: n, ep: ep, cfg: cfg})
	}
	gw4, gw6 := m.gatewaysLocked(sb)
	for i := range plugs {
		plugs[i].routes = Routes{V4: plugs[i].n == gw4, V6: plugs[i].n == gw6}
	}
	return sb, plugs, nil
}

// attachOrder lists the networks a container is configured for: its
// network mode's first, then the others by name.
func (m *Manager) attachOrder(c *container.Container) ([]*netState, error) {
	primary, err := m.find(primaryNetwork(c.HostConfig.NetworkMode))
	if err != nil {
		return nil, err
	}
	out := []*netState{primary}
	if c.NetworkSettings == nil {
		return out, nil
	}
	var names []string
	for name := range c.NetworkSettings.Networks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n, err := m.find(name)
		if err != nil && c.NetworkSettings.Networks[name] != nil && c.NetworkSettings.Networks[name].NetworkID != "" {
			n, err = m.find(c.NetworkSettings.Networks[name].NetworkID)
		}
		if err != nil {
			return nil, err
		}
		if n.ID != primary.ID {
			out = append(out, n)
		}
	}
	return out, nil
}

// plugLocked gives the running container an address on n and its
// interface, which takes the container's default routes of the families
// it is now the best gateway of (gateway.go).
func (m *Manager) plugLocked(ctx context.Context, sb *sandbox, n *netState, c *container.Container, cfg *network.EndpointSettings) (*Endpoint, error) {
	ep, err := m.reserveLocked(ctx, sb, n, c, cfg)
	if err != nil {
		return nil, err
	}
	gw4, gw6 := m.gatewaysLocked(sb)
	routes := Routes{V4: n == gw4, V6: n == gw6}
	if err := m.drv.Plug(ctx, sb.path, n.Network, ep, routes); err != nil {
		forgetEndpointLocked(sb, n, c.ID)
		if routes.V4 || routes.V6 {
			// The plug may have taken the default routes before it
			// failed: they go back to where they were.
			if rerr := m.rerouteLocked(ctx, sb, gw4, gw6); rerr != nil {
				m.log.Warn("restoring the default routes after a failed connect", "container", c.ID, "err", rerr)
			}
		}
		return nil, fmt.Errorf("connecting to network %s: %w", n.Name, err)
	}
	return ep, nil
}

// setupLocked has the driver make n real once per daemon run, and starts
// the DNS server of a user network.
func (m *Manager) setupLocked(ctx context.Context, n *netState) error {
	if n.up {
		return nil
	}
	if err := m.drv.SetupNetwork(ctx, n.Network); err != nil {
		return fmt.Errorf("setting up network %s: %w", n.Name, err)
	}
	if n.UserDefined() {
		d, err := m.startDNS(ctx, n)
		if err != nil {
			m.drv.TeardownNetwork(context.WithoutCancel(ctx), n.Network)
			return fmt.Errorf("embedded DNS server of network %s: %w", n.Name, err)
		}
		n.dns = d
	}
	n.up = true
	return nil
}

// Detach implements networking.Service.
func (m *Manager) Detach(ctx context.Context, id string, opts networking.DetachOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sb := m.sandboxes[id]; sb != nil && opts.SandboxID != "" && sb.key != opts.SandboxID {
		return nil // a later run's network
	}
	return m.detachLocked(ctx, id, opts.Shared)
}

// detachLocked releases container id's network. Unless other containers
// share the namespace, its veths are not deleted one by one: deleting a
// veth waits for an RCU grace period (10-15 ms here, on the path of every
// docker run --rm), while the kernel deletes them by itself, in the
// background, when the namespace dies with its bind mount. The address of
// such a veth is released at once: addresses are handed out round-robin,
// and the namespace it lives in has no process left to use it.
func (m *Manager) detachLocked(ctx context.Context, id string, shared bool) error {
	var errs []error
	sb := m.sandboxes[id]
	if sb != nil {
		for _, f := range sb.forwards {
			if err := m.drv.Unpublish(ctx, f); err != nil {
				errs = append(errs, fmt.Errorf("removing forward of host port %d: %w", f.HostPort, err))
			}
		}
		sb.forwards = nil
	}
	for _, n := range m.nets {
		ep := n.eps[id]
		if ep == nil {
			continue
		}
		if m.drv != nil && n.up && (sb == nil || shared) {
			if err := m.drv.Unplug(ctx, ep); err != nil {
				errs = append(errs, err)
			}
		}
		n.releaseLocked(ep)
		delete(n.eps, id)
	}
	if sb != nil {
		if err := m.drv.RemoveSandbox(ctx, id); err != nil {
			errs = append(errs, err)
		}
		delete(m.sandboxes, id)
	}
	return errors.Join(errs...)
}
