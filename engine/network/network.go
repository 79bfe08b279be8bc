package network

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
)

// Names of the predefined networks, as in Docker.
const (
	BridgeName = network.NetworkBridge
	HostName   = network.NetworkHost
	NoneName   = network.NetworkNone
)

// Driver names as Docker shows them.
const (
	driverBridge = "bridge"
	driverHost   = "host"
	driverNull   = "null"
)

// DefaultBridge is the device of the default bridge network in the
// detached namespace.
const DefaultBridge = "hutch0"

// MTU of bridges and veths: slirp4netns's tap MTU, so that nothing is
// fragmented on the way out.
const MTU = 65520

// Network is one network's record, persisted as <root>/<id>.json.
type Network struct {
	ID         string
	Name       string
	Driver     string
	Created    time.Time
	Internal   bool              `json:",omitempty"`
	Attachable bool              `json:",omitempty"`
	Labels     map[string]string `json:",omitempty"`
	Options    map[string]string `json:",omitempty"`
	// Subnet, Gateway and IPRange are IPv4; zero for host and none, and
	// on a network without IPv4.
	Subnet  netip.Prefix `json:",omitzero"`
	Gateway netip.Addr   `json:",omitzero"`
	IPRange netip.Prefix `json:",omitzero"`
	// NoIPv4 is set on a bridge network created with EnableIPv4 false:
	// its containers have IPv6 addresses only. Records made before IPv6
	// existed read as IPv4 networks, as they are.
	NoIPv4 bool `json:",omitempty"`
	// Subnet6, Gateway6 and IPRange6 are the IPv6 side of a network
	// created with EnableIPv6; zero on IPv4-only networks.
	Subnet6  netip.Prefix `json:",omitzero"`
	Gateway6 netip.Addr   `json:",omitzero"`
	IPRange6 netip.Prefix `json:",omitzero"`
	// Bridge is the bridge device in the detached namespace.
	Bridge string `json:",omitempty"`
}

// Predefined reports whether n is one of the networks every daemon has,
// which cannot be removed.
func (n *Network) Predefined() bool {
	return n.Name == BridgeName || n.Name == HostName || n.Name == NoneName
}

// IsBridge reports whether containers on n get an address on a bridge.
func (n *Network) IsBridge() bool { return n.Driver == driverBridge }

// UserDefined reports whether n is a network the user created, where
// containers have DNS names and aliases.
func (n *Network) UserDefined() bool { return !n.Predefined() }

// IPv4 reports whether containers on n get an IPv4 address.
func (n *Network) IPv4() bool { return n.Subnet.IsValid() }

// IPv6 reports whether containers on n get an IPv6 address.
func (n *Network) IPv6() bool { return n.Subnet6.IsValid() }

// dnsAddr is where n's containers reach its embedded DNS server (and
// the bridge answers): the IPv4 gateway, or on an IPv6-only network the
// IPv6 one.
func (n *Network) dnsAddr() netip.Addr {
	if n.IPv4() {
		return n.Gateway
	}
	return n.Gateway6
}

// Endpoint is a container's attachment to a network while it runs.
type Endpoint struct {
	ID          string
	ContainerID string
	// Name is the container's name without the leading "/".
	Name string
	// IP is the IPv4 address, IP6 the IPv6 one; each is zero when the
	// network has not that family.
	IP  netip.Addr
	IP6 netip.Addr
	MAC net.HardwareAddr
	// GwPriority is the endpoint's gw-priority: the default routes of a
	// container go through the network of its endpoint with the highest
	// (gateway.go).
	GwPriority int
	Aliases    []string
	DNSNames   []string
	// Links are --link name:alias on a user network: alias answers as
	// name, for this container's queries alone.
	Links []string
	// IfName is the interface inside the container (eth0, eth1…).
	IfName string
	// HostIf is the veth end on the bridge.
	HostIf string
	// Sysctls are the interface's sysctls, net.X.Y.IFNAME.Z=value
	// (SysctlsOption), set as it is plugged.
	Sysctls []string
}

// hostIfName names the bridge end of an endpoint's veth pair: short
// (IFNAMSIZ is 16) and derived from the endpoint, so that it can be found
// again from a container record.
func hostIfName(endpointID string) string {
	return "veth" + endpointID[:8]
}

// Addrs are ep's addresses, IPv4 first, as /etc/hosts lists them.
func (ep *Endpoint) Addrs() []netip.Addr {
	var out []netip.Addr
	for _, a := range []netip.Addr{ep.IP, ep.IP6} {
		if a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}

// has reports whether a is one of ep's addresses.
func (ep *Endpoint) has(a netip.Addr) bool {
	return a.IsValid() && (a == ep.IP || a == ep.IP6)
}

// macFor derives a MAC address from an address, as Docker did from the
// IPv4 one: a locally administered 02:42 prefix and the four address
// bytes (the last four of an IPv6 address, on a network without IPv4).
// An address reused by another container then keeps its MAC, so that
// neighbours' caches never point at a veth that is gone.
func macFor(ip netip.Addr) net.HardwareAddr {
	b := ip.AsSlice()
	b = b[len(b)-4:]
	return net.HardwareAddr{0x02, 0x42, b[0], b[1], b[2], b[3]}
}

// newID returns 64 random hex characters, the form of Docker's IDs.
func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("network: reading random bytes: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// summary is n as GET /networks lists it.
func (n *Network) summary() network.Summary {
	out := network.Network{
		Name:       n.Name,
		ID:         n.ID,
		Created:    n.Created,
		Scope:      "local",
		Driver:     n.Driver,
		EnableIPv4: n.IsBridge() && !n.NoIPv4,
		EnableIPv6: n.IPv6(),
		IPAM:       network.IPAM{Driver: "default", Options: map[string]string{}, Config: []network.IPAMConfig{}},
		Internal:   n.Internal,
		Attachable: n.Attachable,
		Options:    maps.Clone(n.Options),
		Labels:     maps.Clone(n.Labels),
	}
	if out.Options == nil {
		out.Options = map[string]string{}
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	// IPv4 first, as Docker lists them.
	for _, c := range []network.IPAMConfig{
		{Subnet: n.Subnet, Gateway: n.Gateway, IPRange: n.IPRange},
		{Subnet: n.Subnet6, Gateway: n.Gateway6, IPRange: n.IPRange6},
	} {
		if c.Subnet.IsValid() {
			out.IPAM.Config = append(out.IPAM.Config, c)
		}
	}
	return network.Summary{Network: out}
}

// load reads every network record under root; damaged ones are skipped
// and reported.
func load(root string) ([]*Network, []error, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, nil, err
	}
	des, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, err
	}
	var out []*Network
	var skipped []error
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			os.Remove(filepath.Join(root, name)) // a write a crash interrupted
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		var n Network
		if err := json.Unmarshal(b, &n); err != nil || n.ID+".json" != name || n.Name == "" {
			skipped = append(skipped, fmt.Errorf("network record %s: %w", name, errors.Join(err, errors.New("damaged"))))
			continue
		}
		out = append(out, &n)
	}
	return out, skipped, nil
}

// save writes n's record atomically: temp file, fsync, rename.
func save(root string, n *Network) error {
	b, err := json.MarshalIndent(n, "", "\t")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(root, ".tmp-"+n.ID+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, n.ID+".json"))
}

func remove(root, id string) error {
	err := os.Remove(filepath.Join(root, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
