package network

import (
	"fmt"
	"net/netip"

	"github.com/containerd/errdefs"
)

// Pool is one of the address pools networks without a subnet take one
// from (daemon.json's default-address-pools): the subnets of Size bits in
// Base, in order.
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

// chooseSubnet returns the first subnet of pools that overlaps none of
// used. Default routes in used are ignored: everything overlaps them.
func chooseSubnet(pools []Pool, used []netip.Prefix) (netip.Prefix, error) {
	for _, pl := range pools {
		base := pl.Base.Masked()
		if pl.Size < base.Bits() || pl.Size > 32 || !base.Addr().Is4() {
			continue
		}
		step := uint64(1) << (32 - pl.Size)
		end := v4(base.Addr()) + uint64(1)<<(32-base.Bits())
		for a := v4(base.Addr()); a < end; a += step {
			p := netip.PrefixFrom(fromV4(a), pl.Size)
			if !overlapsAny(p, used) {
				return p, nil
			}
		}
	}
	return netip.Prefix{}, fmt.Errorf("could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network: %w", errdefs.ErrUnavailable)
}

func v4(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

func fromV4(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Bits() > 0 && u.Addr().Is4() && p.Overlaps(u) {
			return true
		}
	}
	return false
}

// firstHost is the first usable address of p: the gateway by default.
func firstHost(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// broadcast is the last address of p.
func broadcast(p netip.Prefix) netip.Addr {
	return fromV4(v4(p.Masked().Addr()) | (uint64(1)<<(32-p.Bits()) - 1))
}

// pool hands out the addresses of one network's subnet. Allocation is
// serial (the next address after the last one given, wrapping around), as
// Docker's: an address just released is not reused at once, so that a
// peer still talking to the old container does not reach a new one.
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
// not its network or broadcast address, not the gateway.
func (p *pool) usable(a netip.Addr) bool {
	return p.subnet.Contains(a) && a != p.subnet.Addr() && a != broadcast(p.subnet) && a != p.gw
}

// allocate gives owner the next free address of the range.
func (p *pool) allocate(owner string) (netip.Addr, error) {
	first, last := p.rng.Addr(), broadcast(p.rng)
	start := p.last
	if !start.IsValid() || !p.rng.Contains(start) {
		start = last // so that the first candidate is the range's first
	}
	a := start
	for {
		a = a.Next()
		if !p.rng.Contains(a) || a.Compare(last) > 0 {
			a = first
		}
		if _, taken := p.used[a]; !taken && p.usable(a) {
			p.used[a] = owner
			p.last = a
			return a, nil
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("no available IPv4 addresses on this network's address pools: %s (%s): %w", p.subnet, p.rng, errdefs.ErrUnavailable)
		}
	}
}

// reserve gives owner the address it asked for (--ip), or the one it had
// before the daemon restarted.
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

func (p *pool) release(a netip.Addr) { delete(p.used, a) }
