package network

import (
	"context"
	"net/netip"
	"testing"

	"github.com/moby/moby/api/types/network"
)

// The default bridge follows bip and default-address-pools at every
// start, as Docker makes its bridge anew; networks without a subnet take
// theirs from the pools.
func TestBridgePlace(t *testing.T) {
	ctx := context.Background()
	p := netip.MustParsePrefix
	root := t.TempDir()
	drv := newFake()
	start := func(o Options) *Manager {
		t.Helper()
		o.Root, o.Driver = root, drv
		m, err := New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	bridge := func(m *Manager) string {
		n := m.byName(BridgeName)
		return n.Subnet.String() + " " + n.Gateway.String()
	}

	m := start(Options{})
	if got := bridge(m); got != "172.17.0.0/16 172.17.0.1" {
		t.Fatalf("default bridge: %s", got)
	}
	// bip moves it, with its gateway address.
	m = start(Options{BIP: p("10.200.0.5/24")})
	if got := bridge(m); got != "10.200.0.0/24 10.200.0.5" {
		t.Fatalf("with bip: %s", got)
	}
	// Pools without bip: a bridge outside them takes their first subnet,
	// and user networks the next ones.
	pools := []Pool{{p("10.124.0.0/16"), 24}}
	m = start(Options{Pools: pools})
	if got := bridge(m); got != "10.124.0.0/24 10.124.0.1" {
		t.Fatalf("with pools: %s", got)
	}
	n, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.nets[n.ID].Subnet; got != p("10.124.1.0/24") {
		t.Errorf("user network from the pools: %s", got)
	}
	// A start with the same configuration keeps it, even where a new
	// subnet could not be had.
	drv.reserved = []netip.Prefix{p("10.0.0.0/8")} // would refuse any new subnet of the pool
	m = start(Options{Pools: pools})
	if got := bridge(m); got != "10.124.0.0/24 10.124.0.1" {
		t.Fatalf("a second start with the same pools: %s", got)
	}
	// A bip over a route of the namespace is refused.
	drv.reserved = []netip.Prefix{p("10.0.2.0/24")}
	if _, err := New(ctx, Options{Root: root, Driver: drv, BIP: p("10.0.2.9/24")}); err == nil {
		t.Error("bip over the uplink's network: no error")
	}
}
