package networking

import (
	"context"
	"net/netip"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
)

// Service gives containers their network: the engine calls it around a
// container's run and for the network endpoints of the API. How networks
// are made (namespaces, bridges, NAT, forwarded ports) is its business.
// Errors are classed with errdefs: an unknown network is ErrNotFound, a
// request that cannot be honoured ErrInvalidArgument, a network in use
// ErrPermissionDenied (Docker's 403).
type Service interface {
	// Configure validates the network part of a create request (network
	// mode, endpoint configs, published ports) and returns the settings to
	// record: the endpoint configuration, no addresses yet. It may
	// normalise hc.NetworkMode ("" and "default" are "bridge").
	Configure(ctx context.Context, c *container.Container, nc *network.NetworkingConfig) (*containertypes.NetworkSettings, error)
	// Attach gives c its network before it starts. On error nothing is
	// left behind.
	Attach(ctx context.Context, c *container.Container) (Attachment, error)
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

// Attachment is what a container's start needs from its network.
type Attachment struct {
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
}
