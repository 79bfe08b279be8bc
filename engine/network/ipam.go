package network

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
)

// Pool is one of the address pools networks without a subnet take one
// from (daemon.json's default-address-pools): the subnets of Size bits in
// Base, in order. Base is IPv4 or IPv6.
type Pool struct {
	Base netip.Prefix
	Size int
}

// DefaultPools are Docker's: 172.17-31.0.0/16, then 192.168.0.0/16 cut
// in /20s.
var DefaultPools = []Pool{
	{netip.MustParsePrefix("172.17.0.0/16"), 16}, {netip.MustParsePrefix("172.18.0.0/15"), 16},
	{netip.MustParsePrefix("172.20.0.0/14"), 16}, {netip.MustParsePrefix("172.24.0.0/13"), 16},
	{netip.MustParsePrefix("192.168.0.0/16"), 20},
}

// ULAPool is the IPv6 pool of an engine whose pools have none, as Docker
// derives it: a /48 of unique local addresses (fd00::/8, RFC 4193) whose
// 40-bit global ID is taken from the SHA-256 of the engine's ID, cut in
// /64s. It is the same at every start of the engine, and differs from
// one engine to another, so that two engines' networks do not collide
// when they meet (a VPN, a shared LAN).
func ULAPool(engineID string) Pool {
	sum := sha256.Sum256([]byte(engineID))
	gid := binary.BigEndian.Uint64(sum[:8]) & (1<<40 - 1)
	var b [16]byte
	b[0] = 0xfd
	for i := range 5 {
		b[1+i] = byte(gid >> (8 * (4 - i)))
	}
	return Pool{Base: netip.PrefixFrom(netip.AddrFrom16(b), 48), Size: 64}
}

// hasV6 reports whether pools has an IPv6 pool.
func hasV6(pools []Pool) bool {
	for _, p := range pools {
		if p.Base.Addr().Is6() {
			return true
		}
	}
	return false
}

// chooseSubnet returns the first subnet of the pools of a family (v6 or
// not) that overlaps none of used. Default routes in used are ignored:
// everything overlaps them. Where a candidate overlaps, the search goes
// on after the end of what it overlaps, so that an IPv6 pool of 2^56
// subnets with one of them taken is not walked subnet by subnet.
func chooseSubnet(pools []Pool, used []netip.Prefix, v6 bool) (netip.Prefix, error) {
	for _, pl := range pools {
		base := pl.Base.Masked()
		if base.Addr().Is6() != v6 || pl.Size < base.Bits() || pl.Size > base.Addr().BitLen() {
			continue
		}
		a := base.Addr()
		for a.IsValid() && base.Contains(a) {
			p := netip.PrefixFrom(a, pl.Size)
			u, hit := overlapping(p, used)
			if !hit {
				return p, nil
			}
			end := lastAddr(p)
			if l := lastAddr(u); l.Compare(end) > 0 {
				end = lastAddr(netip.PrefixFrom(l, pl.Size).Masked())
			}
			a = end.Next()
		}
	}
	family := "IPv4"
	if v6 {
		family = "IPv6"
	}
	return netip.Prefix{}, errdefs.ErrUnavailable.WithMessage(fmt.Sprintf("could not find an available, non-overlapping %s address pool among the defaults to assign to the network", family))
}

// overlapping returns the first prefix of used, of p's family and not a
// default route, that p overlaps.
func overlapping(p netip.Prefix, used []netip.Prefix) (netip.Prefix, bool) {
	for _, u := range used {
		if u.Bits() > 0 && u.Addr().Is6() == p.Addr().Is6() && p.Overlaps(u) {
			return u, true
		}
	}
	return netip.Prefix{}, false
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	_, hit := overlapping(p, used)
	return hit
}

// firstHost is the first usable address of p: the gateway by default.
func firstHost(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// lastAddr is the last address of p: the broadcast address of an IPv4
// subnet.
func lastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// broadcast is the last address of p.
func broadcast(p netip.Prefix) netip.Addr { return lastAddr(p) }

// pool hands out the addresses of one network's subnet, IPv4 or IPv6.
// Allocation is serial (the next address after the last one given,
// wrapping around), as Docker's: an address just released is not reused
// at once, so that a peer still talking to the old container does not
// reach a new one.
type pool struct {
	subnet netip.Prefix
	// rng is where dynamic addresses come from (the IPRange, or subnet).
	rng  netip.Prefix
	gw   netip.Addr
	used map[netip.Addr]string // address → owner (container ID)
	last netip.Addr
}

func newPool(subnet, rng netip.Prefix, gw netip.Addr) *pool {
	if !rng.IsValid() {
		rng = subnet
	}
	return &pool{subnet: subnet.Masked(), rng: rng.Masked(), gw: gw, used: map[netip.Addr]string{}}
}

// usable reports whether a may be given to a container: in the subnet,
// not its network address (on IPv6 the subnet-router anycast address),
// not the gateway, and on IPv4 not the broadcast address. IPv6 has no
// broadcast: the last address of a subnet is a container's like any
// other.
func (p *pool) usable(a netip.Addr) bool {
	if !p.subnet.Contains(a) || a == p.subnet.Addr() || a == p.gw {
		return false
	}
	return a.Is6() || a != broadcast(p.subnet)
}

// family names the pool's address family in messages.
func (p *pool) family() string {
	if p.subnet.Addr().Is6() {
		return "IPv6"
	}
	return "IPv4"
}

// allocate gives owner the next free address of the range. The walk
// stops at the first free address: a range of 2^64 addresses with a few
// taken is not walked, and only a range that is full is walked to its
// end.
func (p *pool) allocate(owner string) (netip.Addr, error) {
	first, last := p.rng.Addr(), lastAddr(p.rng)
	start := p.last
	if !start.IsValid() || !p.rng.Contains(start) {
		start = last // so that the first candidate is the range's first
	}
	a := start
	for {
		a = a.Next()
		if !a.IsValid() || !p.rng.Contains(a) {
			a = first
		}
		if _, taken := p.used[a]; !taken && p.usable(a) {
			p.used[a] = owner
			p.last = a
			return a, nil
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("no available %s addresses on this network's address pools: %s (%s): %w", p.family(), p.subnet, p.rng, errdefs.ErrUnavailable)
		}
	}
}

// reserve gives owner the address it asked for (--ip, --ip6), or the one
// it had before the daemon restarted.
func (p *pool) reserve(a netip.Addr, owner string) error {
	if !p.usable(a) {
		return fmt.Errorf("no configured subnet or ip-range contain the IP address %s: %w", a, errdefs.ErrInvalidArgument)
	}
	if o, taken := p.used[a]; taken && o != owner {
		return errdefs.ErrConflict.WithMessage("Address already in use: " + a.String()) // Docker's words
	}
	p.used[a] = owner
	return nil
}

// release frees a; nil pools and invalid addresses are no-ops, so that
// endpoints without an address of a family release alike.
func (p *pool) release(a netip.Addr) {
	if p != nil && a.IsValid() {
		delete(p.used, a)
	}
}

// status counts the pool for network inspect's Status (API 1.52), as
// Docker does: the subnet's addresses in use, its own reserved ones
// included (network address, gateway, IPv4 broadcast; on IPv6 the
// subnet-router anycast address), and the range's addresses still free
// for dynamic allocation. A range of 2^64 addresses or more counts as
// 2^64-1.
func (p *pool) status() network.SubnetStatus {
	reserved := []netip.Addr{p.subnet.Addr(), p.gw}
	if p.subnet.Addr().Is4() {
		reserved = append(reserved, broadcast(p.subnet))
	}
	var st network.SubnetStatus
	inRange := uint64(0)
	seen := map[netip.Addr]bool{}
	for _, a := range reserved {
		if a.IsValid() && p.subnet.Contains(a) && !seen[a] {
			seen[a] = true
			st.IPsInUse++
			if p.rng.Contains(a) {
				inRange++
			}
		}
	}
	for a := range p.used {
		if !seen[a] {
			st.IPsInUse++
			if p.rng.Contains(a) {
				inRange++
			}
		}
	}
	size := uint64(math.MaxUint64)
	if hostBits := p.rng.Addr().BitLen() - p.rng.Bits(); hostBits < 64 {
		size = uint64(1) << hostBits
	}
	if inRange < size {
		st.DynamicIPsAvailable = size - inRange
	}
	return st
}
