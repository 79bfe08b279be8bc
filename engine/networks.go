package engine

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"net/netip"
	"path/filepath"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Networks gives containers their network: the engine calls it around a
// container's run and for the network endpoints of the API. How networks
// are made (namespaces, bridges, NAT, forwarded ports) is its business.
// Errors are classed with errdefs: an unknown network is ErrNotFound, a
// request that cannot be honoured ErrInvalidArgument, a network in use
// ErrPermissionDenied (Docker's 403).
type Networks interface {
	// Configure validates the network part of a create request (network
	// mode, endpoint configs, published ports) and returns the settings to
	// record: the endpoint configuration, no addresses yet. It may
	// normalise hc.NetworkMode ("" and "default" are "bridge").
	Configure(ctx context.Context, c *container.Container, nc *network.NetworkingConfig) (*containertypes.NetworkSettings, error)
	// Attach gives c its network before it starts. On error nothing is
	// left behind.
	Attach(ctx context.Context, c *container.Container) (NetAttachment, error)
	// Detach releases what Attach and Connect made for a container: its
	// namespace, addresses and published ports. It may be called more
	// than once, and for a container that never ran.
	Detach(ctx context.Context, id string, opts DetachOptions) error
	// Connect adds c to a network: plugged in at once when c runs, else
	// at its next start. It returns the network's name and the endpoint
	// settings to record under it.
	Connect(ctx context.Context, c *container.Container, ref string, cfg *network.EndpointSettings) (string, *network.EndpointSettings, error)
	// Disconnect removes c from a network and returns the network's name.
	Disconnect(ctx context.Context, c *container.Container, ref string, force bool) (string, error)
	// DNS is the resolver of running container id's networks as they are
	// now (Connect and Disconnect change it); ok is false when id has no
	// network namespace of its own running.
	DNS(ctx context.Context, id string) (dns DNS, ok bool)
	// Restore runs once when the engine starts: the running containers
	// keep their addresses, everything else a previous daemon left (network
	// namespaces, veths) is removed. It returns the running containers
	// whose network namespace did not outlive that daemon.
	Restore(ctx context.Context, running []*container.Container) (lost []string, err error)

	NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error)
	NetworkInspect(ctx context.Context, ref string) (network.Inspect, error)
	NetworkList(ctx context.Context, filters string) ([]network.Summary, error)
	NetworkRemove(ctx context.Context, ref string) error
	NetworkPrune(ctx context.Context, filters string) (network.PruneReport, error)
}

// DNS is the resolver a container's network gives it: what its
// resolv.conf names.
type DNS struct {
	// Nameservers and DNSOptions make resolv.conf; no Nameservers is the
	// host's resolv.conf without loopback servers.
	Nameservers []string
	DNSOptions  []string
	// EmbeddedDNS: the nameserver is hutch's, which answers the names of
	// containers; --dns then does not replace it in resolv.conf.
	EmbeddedDNS bool
}

// DetachOptions say which network Detach releases and how.
type DetachOptions struct {
	// SandboxID (NetworkSettings.SandboxID of the run that ended) limits
	// the release to that run's network: a restarted container may have a
	// new one by the time the old run is cleaned up. "" releases whatever
	// there is.
	SandboxID string
	// Shared says that other running containers joined the namespace
	// (--network container:<id>): its interfaces must be taken out of it,
	// since it lives on. Otherwise the namespace dies with its last
	// process and its interfaces go with it.
	Shared bool
}

// NetAttachment is what a container's start needs from its network.
type NetAttachment struct {
	// NetNSPath is the network namespace to join; "" is a new one with
	// loopback only (or the host's with --network host).
	NetNSPath string
	// Settings are recorded as the container's NetworkSettings.
	Settings *containertypes.NetworkSettings
	// Addrs are the container's addresses, those of each network in
	// attach order (its primary network's first), IPv4 then IPv6:
	// /etc/hosts maps the hostname to each, as Docker has a line for each
	// address of each endpoint.
	Addrs []netip.Addr
	// DNS makes resolv.conf.
	DNS
	// HostGateway is the address of the host (host-gateway,
	// host.docker.internal); "" when containers cannot reach it.
	HostGateway string

	// shareFrom is, with --network container:<id>, that container's
	// /etc files' directory: its hosts and resolv.conf are used.
	shareFrom string
	// joined is the ID of the container whose namespace is shared.
	joined   string
	hostname string
}

// attachNetwork gives c its network before the start and records the
// settings. The caller detaches on a later failure.
func (e *Engine) attachNetwork(ctx context.Context, c *container.Container) (NetAttachment, error) {
	mode := c.HostConfig.NetworkMode
	if mode.IsContainer() {
		return e.joinContainerNetwork(ctx, c)
	}
	if e.opts.Networks == nil {
		return e.legacyAttachment(mode), nil
	}
	att, err := e.opts.Networks.Attach(ctx, c)
	if err != nil {
		return NetAttachment{}, err
	}
	if err := e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		r.NetworkSettings = mergeSettings(r.NetworkSettings, att.Settings)
		return nil
	}); err != nil {
		e.opts.Networks.Detach(context.WithoutCancel(ctx), c.ID, DetachOptions{SandboxID: att.Settings.SandboxID})
		return NetAttachment{}, err
	}
	return att, nil
}

// legacyAttachment is the network without a Networks implementation:
// containers join the daemon's NetNS, as slirp4netns's guest.
func (e *Engine) legacyAttachment(mode containertypes.NetworkMode) NetAttachment {
	if mode.IsHost() || mode.IsNone() || e.opts.NetNS == "" {
		return NetAttachment{}
	}
	return NetAttachment{
		NetNSPath:   e.opts.NetNS,
		Addrs:       []netip.Addr{netip.MustParseAddr(slirpGuestIP)},
		DNS:         DNS{Nameservers: []string{slirpDNS}},
		HostGateway: slirpHost,
	}
}

// joinContainerNetwork is --network container:<ref>: the other container
// must run; c shares its namespace, its hosts, resolv.conf and hostname.
func (e *Engine) joinContainerNetwork(ctx context.Context, c *container.Container) (NetAttachment, error) {
	other, err := e.containers.Get(ctx, c.HostConfig.NetworkMode.ConnectedContainer())
	if err != nil {
		return NetAttachment{}, err
	}
	if other.ID == c.ID {
		return NetAttachment{}, errdefs.ErrInvalidArgument.WithMessage("cannot join own network namespace")
	}
	if !other.State.Running() {
		return NetAttachment{}, errdefs.ErrConflict.WithMessage(fmt.Sprintf("cannot join network namespace of a non running container: %s", other.ID))
	}
	if other.HostConfig != nil && other.HostConfig.NetworkMode.IsHost() {
		return NetAttachment{}, errdefs.ErrNotImplemented.WithMessage("joining the network of a container that uses the host's network is not supported: use --network host")
	}
	path := fmt.Sprintf("/proc/%d/ns/net", other.State.Pid)
	if ns := other.NetworkSettings; ns != nil && ns.SandboxKey != "" {
		path = ns.SandboxKey
	}
	return NetAttachment{NetNSPath: path, shareFrom: e.etcDir(other), joined: other.ID, hostname: other.Config.Hostname}, nil
}

// detachNetwork releases the network of a container's run (sandboxID, or
// "" for whatever it has) after the run ended or its start failed, and
// clears the addresses from the record unless a newer run wrote them.
func (e *Engine) detachNetwork(ctx context.Context, id, sandboxID string) {
	if e.opts.Networks == nil {
		return
	}
	e.releaseNetwork(ctx, id, sandboxID)
	err := e.containers.Update(ctx, id, func(r *container.Container) error {
		if ns := r.NetworkSettings; ns != nil && (sandboxID == "" || ns.SandboxID == sandboxID) {
			clearOperational(ns)
		}
		return nil
	})
	if err != nil && !errdefs.IsNotFound(err) {
		e.log.Warn("recording the network release", "container", id, "err", err)
	}
}

// releaseNetwork releases the network of a container's run without
// touching its record.
func (e *Engine) releaseNetwork(ctx context.Context, id, sandboxID string) {
	if e.opts.Networks == nil {
		return
	}
	opts := DetachOptions{SandboxID: sandboxID, Shared: e.joins.shared(id)}
	if err := e.opts.Networks.Detach(ctx, id, opts); err != nil {
		e.log.Warn("releasing the network", "container", id, "err", err)
	}
}

// mergeSettings puts the settings of a start into the record: the
// endpoints attached replace their configuration entries.
func mergeSettings(old, att *containertypes.NetworkSettings) *containertypes.NetworkSettings {
	if att == nil {
		return old
	}
	out := *att
	out.Networks = map[string]*network.EndpointSettings{}
	if old != nil {
		for k, v := range old.Networks {
			out.Networks[k] = v
		}
	}
	for k, v := range att.Networks {
		out.Networks[k] = v
	}
	return &out
}

// clearOperational drops what only holds while the container runs, as
// Docker does on stop: addresses, endpoint IDs, published ports. The
// configuration (aliases, static addresses) stays.
func clearOperational(ns *containertypes.NetworkSettings) {
	if ns == nil {
		return
	}
	ns.SandboxID, ns.SandboxKey = "", ""
	ns.Ports = nil
	for _, ep := range ns.Networks {
		if ep == nil {
			continue
		}
		ep.EndpointID = ""
		ep.Gateway, ep.IPAddress, ep.IPv6Gateway, ep.GlobalIPv6Address = netip.Addr{}, netip.Addr{}, netip.Addr{}, netip.Addr{}
		ep.IPPrefixLen, ep.GlobalIPv6PrefixLen = 0, 0
		ep.DNSNames = nil
		if ep.IPAMConfig == nil || !ep.IPAMConfig.IPv4Address.IsValid() {
			ep.MacAddress = nil
		}
	}
}

// hasOperational reports whether a record still shows a network that only
// a running container has.
func hasOperational(ns *containertypes.NetworkSettings) bool {
	if ns == nil {
		return false
	}
	if ns.SandboxID != "" || ns.SandboxKey != "" || len(ns.Ports) > 0 {
		return true
	}
	for _, ep := range ns.Networks {
		if ep != nil && (ep.EndpointID != "" || ep.IPAddress.IsValid()) {
			return true
		}
	}
	return false
}

// restoreNetworks runs after the container records are reconciled: the
// records of containers that are not running lose their addresses, and
// the Networks implementation keeps the running ones' and cleans the rest.
func (e *Engine) restoreNetworks(ctx context.Context) (lost []string, err error) {
	if e.opts.Networks == nil {
		return nil, nil
	}
	list, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, err
	}
	var running []*container.Container
	for _, c := range list {
		if c.State.Running() || c.State.Paused() {
			running = append(running, c)
			continue
		}
		if hasOperational(c.NetworkSettings) {
			e.detachNetwork(ctx, c.ID, "")
		}
	}
	return e.opts.Networks.Restore(ctx, running)
}

func (e *Engine) networks() (Networks, error) {
	if e.opts.Networks == nil {
		return nil, errdefs.ErrNotImplemented.WithMessage("networks are not available in this daemon")
	}
	return e.opts.Networks, nil
}

// NetworkCreate answers POST /networks/create. The names of the predefined
// networks and "default" (which network modes read as the bridge) are
// refused with Docker's 403, whether or not such a network exists.
func (e *Engine) NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	n, err := e.networks()
	if err != nil {
		return network.CreateResponse{}, err
	}
	switch mode := containertypes.NetworkMode(req.Name); {
	case mode.IsBridge(), mode.IsHost(), mode.IsNone(), mode.IsDefault():
		return network.CreateResponse{}, errdefs.ErrPermissionDenied.WithMessage(fmt.Sprintf("operation is not permitted on predefined %s network", req.Name))
	}
	resp, err := n.NetworkCreate(ctx, req)
	if err == nil {
		e.networkEvent(eventtypes.ActionCreate, resp.ID, req.Name, nil)
	}
	return resp, err
}

// networkEvent publishes action of the network id, named name, with
// extra.
func (e *Engine) networkEvent(action eventtypes.Action, id, name string, extra map[string]string) {
	attrs := map[string]string{"name": name, "type": "bridge"}
	maps.Copy(attrs, extra)
	e.events.Publish(eventtypes.NetworkEventType, action, id, attrs)
}

// NetworkInspect answers GET /networks/{id}.
func (e *Engine) NetworkInspect(ctx context.Context, ref string) (network.Inspect, error) {
	n, err := e.networks()
	if err != nil {
		return network.Inspect{}, err
	}
	return n.NetworkInspect(ctx, ref)
}

// NetworkList answers GET /networks.
func (e *Engine) NetworkList(ctx context.Context, filters string) ([]network.Summary, error) {
	n, err := e.networks()
	if err != nil {
		return nil, err
	}
	return n.NetworkList(ctx, filters)
}

// NetworkRemove answers DELETE /networks/{id}.
func (e *Engine) NetworkRemove(ctx context.Context, ref string) error {
	n, err := e.networks()
	if err != nil {
		return err
	}
	in, err := n.NetworkInspect(ctx, ref)
	if err != nil {
		return err
	}
	e.awaitExiting(ctx, maps.Keys(in.Containers))
	if err := n.NetworkRemove(ctx, in.ID); err != nil {
		return err
	}
	e.networkEvent(eventtypes.ActionDestroy, in.ID, in.Name, nil)
	return nil
}

// awaitExiting waits, a bounded while, until those of the containers ids
// whose process has ended have their exit recorded: their monitor drains
// the attached clients first and releases the network after. A client
// that saw a container's output end and at once removes its network
// (docker run, then docker network rm) is then not refused for an
// endpoint that is on its way out. Containers still running, or not
// started yet, are not waited for.
func (e *Engine) awaitExiting(ctx context.Context, ids iter.Seq[string]) {
	ctx, cancel := context.WithTimeout(ctx, attachDrain+time.Second)
	defer cancel()
	for id := range ids {
		e.runs.mu.Lock()
		live := e.runs.shims[id] != nil
		e.runs.mu.Unlock()
		if live {
			continue
		}
		ch, err := e.containers.Wait(ctx, id, container.WaitNotRunning)
		if err != nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// NetworkPrune answers POST /networks/prune.
func (e *Engine) NetworkPrune(ctx context.Context, filters string) (network.PruneReport, error) {
	n, err := e.networks()
	if err != nil {
		return network.PruneReport{}, err
	}
	rep, err := n.NetworkPrune(ctx, filters)
	if err == nil {
		// As Docker: a network frees no space.
		e.pruneEvent(eventtypes.NetworkEventType, 0)
	}
	return rep, err
}

// NetworkConnect answers POST /networks/{id}/connect: a running container
// gets a new interface at once, a stopped one at its next start.
func (e *Engine) NetworkConnect(ctx context.Context, ref string, req network.ConnectRequest) error {
	n, err := e.networks()
	if err != nil {
		return err
	}
	c, err := e.containers.Get(ctx, req.Container)
	if err != nil {
		return err
	}
	var name string
	var ep *network.EndpointSettings
	if err := e.reEtc(ctx, c, func() (netChange, error) {
		var err error
		if name, ep, err = n.Connect(ctx, c, ref, req.EndpointConfig); err != nil {
			return netChange{}, err
		}
		return netChange{added: endpointAddrs(ep)}, nil
	}); err != nil {
		return err
	}
	e.networkEvent(eventtypes.ActionConnect, ep.NetworkID, name, map[string]string{"container": c.ID})
	return e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		if r.NetworkSettings == nil {
			r.NetworkSettings = &containertypes.NetworkSettings{}
		}
		if r.NetworkSettings.Networks == nil {
			r.NetworkSettings.Networks = map[string]*network.EndpointSettings{}
		}
		r.NetworkSettings.Networks[name] = ep
		return nil
	})
}

// NetworkDisconnect answers POST /networks/{id}/disconnect.
func (e *Engine) NetworkDisconnect(ctx context.Context, ref string, req network.DisconnectRequest) error {
	n, err := e.networks()
	if err != nil {
		return err
	}
	c, err := e.containers.Get(ctx, req.Container)
	if err != nil {
		return err
	}
	var name string
	if err := e.reEtc(ctx, c, func() (netChange, error) {
		var err error
		if name, err = n.Disconnect(ctx, c, ref, req.Force); err != nil {
			return netChange{}, err
		}
		// The addresses it had there, as its record shows while it runs.
		var gone []netip.Addr
		if ns := c.NetworkSettings; ns != nil {
			gone = endpointAddrs(ns.Networks[name])
		}
		return netChange{removed: gone}, nil
	}); err != nil {
		return err
	}
	if ns := c.NetworkSettings; ns != nil && ns.Networks[name] != nil {
		e.networkEvent(eventtypes.ActionDisconnect, ns.Networks[name].NetworkID, name, map[string]string{"container": c.ID})
	}
	return e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		if r.NetworkSettings != nil {
			delete(r.NetworkSettings.Networks, name)
		}
		return nil
	})
}

// sharedEtc returns, for --network container:<id>, the other container's
// hosts and resolv.conf files.
func (a NetAttachment) sharedEtc() (hosts, resolv string, ok bool) {
	if a.shareFrom == "" {
		return "", "", false
	}
	return filepath.Join(a.shareFrom, "hosts"), filepath.Join(a.shareFrom, "resolv.conf"), true
}

// configureNetwork checks the network part of a create request and records
// the endpoint configuration in c. --network container:<ref> must name an
// existing container.
func (e *Engine) configureNetwork(ctx context.Context, c *container.Container, nc *network.NetworkingConfig) error {
	mode := c.HostConfig.NetworkMode
	if mode.IsContainer() {
		if _, err := e.containers.Get(ctx, mode.ConnectedContainer()); err != nil {
			return err
		}
	}
	if e.opts.Networks == nil {
		switch {
		case mode.IsContainer(), mode == "", mode.IsDefault(), mode.IsBridge(), mode.IsHost(), mode.IsNone():
			return nil
		}
		return errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("network mode %q is not supported: this daemon has no networks", mode))
	}
	ns, err := e.opts.Networks.Configure(ctx, c, nc)
	if err != nil {
		return err
	}
	c.NetworkSettings = ns
	return nil
}

// sandboxID names a run's network in its settings ("" when none).
func sandboxID(ns *containertypes.NetworkSettings) string {
	if ns == nil {
		return ""
	}
	return ns.SandboxID
}
