// Package network owns hutch's network model: the networks (the predefined
// bridge, host and none, and user-defined bridge networks) persisted as one
// JSON record each, their address management, the endpoints of running
// containers, published ports, and the embedded DNS server that lets the
// containers of a user network find each other by name and alias.
//
// A bridge network has IPv4, IPv6 or both, as Docker's (EnableIPv4,
// EnableIPv6): each family has its subnet, gateway and address pool, the
// IPv6 subnet from the engine's ULA prefix when the user gave none. A
// container on several networks has its default route of each family
// through the network its endpoints' gw-priority chooses (gateway.go).
//
// It implements networking.Service. What happens in the kernel (network
// namespaces, veth pairs, bridges, NAT, port forwarding, sockets in the
// detached namespace) is a Driver's business: rootless/network is the one
// hutch runs with. Without a driver (real root, or the daemon's
// --network=none) containers of bridge networks get a namespace with
// loopback only.
package network
