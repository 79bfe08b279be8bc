//go:build integration

package integration

import (
	"context"
	"net/netip"
	"testing"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// Network inspect's Status (API 1.52) counts each subnet's addresses in
// use and those left for dynamic allocation, as Docker does; earlier
// versions have no such field.
func TestNetworkInspectStatus(t *testing.T) {
	d, ref := pulled(t)
	must(t, d, "network", "create", "--ipv6", "--subnet", "10.77.0.0/24", "--ip-range", "10.77.0.64/30", "--subnet", "fd77::/64", "--ip-range", "fd77::/120", "counted")
	must(t, d, "run", "-d", "--name", "one", "--network", "counted", ref, "sleep", "300")
	ctx := context.Background()
	inspect := func(version string) network.Inspect {
		t.Helper()
		c, err := client.New(client.WithHost(d.Host()), client.WithAPIVersion(version))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.NetworkInspect(ctx, "counted", client.NetworkInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Network
	}
	n := inspect("1.52")
	if n.Status == nil {
		t.Fatal("no Status at API 1.52")
	}
	want := network.SubnetStatuses{
		// network address, gateway, broadcast and the container; a /30
		// range with one of its four taken.
		netip.MustParsePrefix("10.77.0.0/24"): {IPsInUse: 4, DynamicIPsAvailable: 3},
		// subnet-router anycast, gateway and the container, all three in
		// the /120 range.
		netip.MustParsePrefix("fd77::/64"): {IPsInUse: 3, DynamicIPsAvailable: 253},
	}
	for p, w := range want {
		if got := n.Status.IPAM.Subnets[p]; got != w {
			t.Errorf("%s: %+v, want %+v", p, got, w)
		}
	}
	if n := inspect("1.51"); n.Status != nil {
		t.Errorf("API 1.51 has Status %+v", n.Status)
	}
}
