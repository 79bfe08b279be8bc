// Package network makes hutch's networks real inside the detached network
// namespace that slirp4netns serves (rootlesskit's --detach-netns): one
// bridge per network, a network namespace per container bind-mounted under
// the runtime state dir, veth pairs, masquerading out through the tap
// device with nftables (no iptables binary), and published ports through
// rootlesskit's port driver API. It implements engine/network.Driver.
//
// IPv6 networks are dual-stack or IPv6-only bridges: their containers
// reach each other and the bridge (the gateway, the embedded DNS server,
// published ports) over IPv6, but not beyond it: slirp4netns runs without
// IPv6, so the detached namespace has no IPv6 route out.
//
// The engine stays in the host's network namespace, which it cannot
// re-enter once a thread has left it (the host's namespace belongs to the
// initial user namespace). So every operation that needs the detached
// namespace runs on one OS thread that moved there for good; sockets made
// there (netlink, nftables, the embedded DNS server's) keep their namespace
// and are used from anywhere.
package network
