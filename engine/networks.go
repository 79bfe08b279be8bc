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
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
)

// netAttachment is what a container's start needs from its network: the
// network service's attachment, or the engine's own for --network
// container:<id>.
type netAttachment struct {
	networking.Attachment
	// shareFrom is, with --network container:<id>, that container's
	// /etc files' directory: its hosts and resolv.conf are used.
	shareFrom string
	// joined is the ID of the container whose namespace is shared.
	joined   string
	hostname string
}

// attachNetwork gives c its network before the start and records the
// settings. The caller detaches on a later failure.
func (e *Engine) attachNetwork(ctx context.Context, c *container.Container) (netAttachment, error) {
	mode := c.HostConfig.NetworkMode
	if mode.IsContainer() {
		return e.joinContainerNetwork(ctx, c)
	}
	if e.opts.Networks == nil {
		return e.legacyAttachment(mode), nil
	}
	att, err := e.opts.Networks.Attach(ctx, c)
	if err != nil {
		return netAttachment{}, err
	}
	if err := e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		r.NetworkSettings = mergeSettings(r.NetworkSettings, att.Settings)
		return nil
	}); err != nil {
		e.opts.Networks.Detach(context.WithoutCancel(ctx), c.ID, networking.DetachOptions{SandboxID: att.Settings.SandboxID})
		return netAttachment{}, err
	}
	return netAttachment{Attachment: att}, nil
}

// legacyAttachment is the network without a Networks implementation:
// containers join the daemon's NetNS, as slirp4netns's guest.
func (e *Engine) legacyAttachment(mode containertypes.NetworkMode) netAttachment {
	if mode.IsHost() || mode.IsNone() || e.opts.NetNS == "" {
		return netAttachment{}
	}
	return netAttachment{Attachment: networking.Attachment{
		NetNSPath:   e.opts.NetNS,
		Addrs:       []netip.Addr{netip.MustParseAddr(slirpGuestIP)},
		DNS:         networking.DNS{Nameservers: []string{slirpDNS}},
		HostGateway: slirpHost,
	}}
}

// joinContainerNetwork is --network container:<ref>: the other container
// must run; c shares its namespace, its hosts, resolv.conf and hostname.
func (e *Engine) joinContainerNetwork(ctx context.Context, c *container.Container) (netAttachment, error) {
	other, err := e.containers.Get(ctx, c.HostConfig.NetworkMode.ConnectedContainer())
	if err != nil {
		return netAttachment{}, err
	}
	if other.ID == c.ID {
		return netAttachment{}, errdefs.ErrInvalidArgument.WithMessage("cannot join own network namespace")
	}
	if !other.State.Running() {
		return netAttachment{}, errdefs.ErrConflict.WithMessage(fmt.Sprintf("cannot join network namespace of a non running container: %s", other.ID))
	}
	if other.HostConfig != nil && other.HostConfig.NetworkMode.IsHost() {
		return netAttachment{}, errdefs.ErrNotImplemented.WithMessage("joining the network of a container that uses the host's network is not supported: use --network host")
	}
	path := fmt.Sprintf("/proc/%d/ns/net", other.State.Pid)
	if ns := other.NetworkSettings; ns != nil && ns.SandboxKey != "" {
		path = ns.SandboxKey
	}
	return netAttachment{Attachment: networking.Attachment{NetNSPath: path}, shareFrom: e.etcDir(other), joined: other.ID, hostname: other.Config.Hostname}, nil
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
	opts := networking.DetachOptions{SandboxID: sandboxID, Shared: e.joins.shared(id)}
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

func (e *Engine) networks() (networking.Service, error) {
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
func (a netAttachment) sharedEtc() (hosts, resolv string, ok bool) {
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
