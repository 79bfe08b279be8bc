package config

import (
	"fmt"
	"net/netip"
)

// AddressPool is one entry of daemon.json's "default-address-pools": the
// networks created without a subnet take one of Size bits out of Base.
type AddressPool struct {
	Base string `json:"base"`
	Size int    `json:"size"`
}

// checkBIP reads daemon.json's "bip", the default bridge's gateway
// address with the prefix length of its subnet ("10.200.0.1/24").
func checkBIP(bip string) error {
	p, err := netip.ParsePrefix(bip)
	switch {
	case err != nil:
		return fmt.Errorf("bip %q: want the bridge's address and prefix length, e.g. 10.200.0.1/24: %w", bip, err)
	case !p.Addr().Is4():
		return fmt.Errorf("bip %q: only IPv4 is supported", bip)
	case p.Bits() > 30:
		return fmt.Errorf("bip %q: a /%d has no room for containers", bip, p.Bits())
	case p.Addr() == p.Masked().Addr():
		return fmt.Errorf("bip %q: the address is the subnet's own; give the bridge's, e.g. %s", bip, netip.PrefixFrom(p.Addr().Next(), p.Bits()))
	}
	return nil
}

// checkPools reads daemon.json's "default-address-pools": IPv4 pools,
// and IPv6 ones for the networks created with IPv6 (without one, those
// take their subnets from a ULA prefix derived from the engine's ID).
func checkPools(pools []AddressPool) error {
	for _, ap := range pools {
		p, err := netip.ParsePrefix(ap.Base)
		maxSize := 30
		if err == nil && p.Addr().Is6() {
			maxSize = 126
		}
		switch {
		case err != nil:
			return fmt.Errorf("default-address-pools: base %q: %w", ap.Base, err)
		case p.Addr().Is4In6():
			return fmt.Errorf("default-address-pools: base %q: write an IPv4 base as IPv4", ap.Base)
		case p != p.Masked():
			return fmt.Errorf("default-address-pools: base %q is not a network address: want %s", ap.Base, p.Masked())
		case ap.Size < p.Bits() || ap.Size > maxSize:
			return fmt.Errorf("default-address-pools: base %s, size %d: the size must be between %d (the base's) and %d", ap.Base, ap.Size, p.Bits(), maxSize)
		}
	}
	return nil
}
