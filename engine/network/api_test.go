package network

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
)

func TestCheckCreate(t *testing.T) {
	p, a := netip.MustParsePrefix, netip.MustParseAddr
	yes, no := true, false
	ipam := func(cs ...network.IPAMConfig) *network.IPAM { return &network.IPAM{Config: cs} }
	const none = "invalid Prefix invalid IP invalid Prefix"
	v6 := func(c ...network.IPAMConfig) network.CreateRequest {
		return network.CreateRequest{Name: "n", EnableIPv6: &yes, IPAM: ipam(c...)}
	}
	tests := []struct {
		name  string
		req   network.CreateRequest
		err   error
		text  string
		want  string // subnet gateway range
		want6 string // the same of IPv6; "" is none, and no IPv6
		no4   bool
	}{
		{name: "plain", req: network.CreateRequest{Name: "n"}, want: "invalid Prefix invalid IP invalid Prefix"},
		{name: "subnet", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24")})}, want: "10.9.0.0/24 10.9.0.1 invalid Prefix"},
		{name: "gateway and range", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/16"), Gateway: a("10.9.255.254"), IPRange: p("10.9.8.0/24")})}, want: "10.9.0.0/16 10.9.255.254 10.9.8.0/24"},
		{name: "empty name", req: network.CreateRequest{Name: " "}, err: errdefs.ErrInvalidArgument},
		{name: "slash in name", req: network.CreateRequest{Name: "a/b"}, err: errdefs.ErrInvalidArgument},
		{name: "overlay", req: network.CreateRequest{Name: "n", Driver: "overlay"}, err: errdefs.ErrNotImplemented},
		{name: "another host", req: network.CreateRequest{Name: "n", Driver: "host"}, err: errdefs.ErrPermissionDenied, text: `only one instance of "host" network is allowed`},
		{name: "swarm scope", req: network.CreateRequest{Name: "n", Scope: "swarm"}, err: errdefs.ErrNotImplemented},
		{name: "ipv6 from the pools", req: network.CreateRequest{Name: "n", EnableIPv6: &yes}, want: none, want6: none},
		{name: "dual stack", req: v6(network.IPAMConfig{Subnet: p("10.9.0.0/24")}, network.IPAMConfig{Subnet: p("fd00:1::/64")}), want: "10.9.0.0/24 10.9.0.1 invalid Prefix", want6: "fd00:1::/64 fd00:1::1 invalid Prefix"},
		{name: "ipv6 /56 with a /64 range and a gateway", req: v6(network.IPAMConfig{Subnet: p("fd2e:b68c:ce26::/56"), IPRange: p("fd2e:b68c:ce26::/64"), Gateway: a("fd2e:b68c:ce26::1")}), want: none, want6: "fd2e:b68c:ce26::/56 fd2e:b68c:ce26::1 fd2e:b68c:ce26::/64"},
		{name: "ipv6 range of two at the end of a /64", req: v6(network.IPAMConfig{Subnet: p("fda9:8d04:86e::/64"), IPRange: p("fda9:8d04:86e::ffff:ffff:ffff:fffe/127")}), want: none, want6: "fda9:8d04:86e::/64 fda9:8d04:86e::1 fda9:8d04:86e:0:ffff:ffff:ffff:fffe/127"},
		{name: "ipv6 gateway last address", req: v6(network.IPAMConfig{Subnet: p("fd00:1::/120"), Gateway: a("fd00:1::ff")}), want: none, want6: "fd00:1::/120 fd00:1::ff invalid Prefix"},
		{name: "ipv6 subnet without ipv6 is ignored", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("fd00::/64")})}, want: none},
		{name: "ipv6 by option", req: network.CreateRequest{Name: "n", Options: map[string]string{optEnableIPv6: "true"}}, want: none, want6: none},
		{name: "flag wins over option", req: network.CreateRequest{Name: "n", EnableIPv6: &no, Options: map[string]string{optEnableIPv6: "true"}}, want: none},
		{name: "ipv6 only", req: network.CreateRequest{Name: "n", EnableIPv4: &no, EnableIPv6: &yes, IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24")}, network.IPAMConfig{Subnet: p("fd00:2::/64")})}, want: none, want6: "fd00:2::/64 fd00:2::1 invalid Prefix", no4: true},
		{name: "ipv6 host bits set", req: v6(network.IPAMConfig{Subnet: p("fd00::1/64")}), err: errdefs.ErrInvalidArgument, text: "invalid subnet fd00::1/64 : it should be fd00::/64"},
		{name: "ipv6 subnet too small", req: v6(network.IPAMConfig{Subnet: p("fd00::/127")}), err: errdefs.ErrInvalidArgument, text: "no room"},
		{name: "ipv6 gateway outside", req: v6(network.IPAMConfig{Subnet: p("fd00::/64"), Gateway: a("fd01::1")}), err: errdefs.ErrInvalidArgument, text: "invalid gateway address fd01::1"},
		{name: "ipv6 gateway is the subnet's address", req: v6(network.IPAMConfig{Subnet: p("fd00::/64"), Gateway: a("fd00::")}), err: errdefs.ErrInvalidArgument, text: "invalid gateway"},
		{name: "ipv4 gateway in an ipv6 subnet", req: v6(network.IPAMConfig{Subnet: p("fd00::/64"), Gateway: a("10.0.0.1")}), err: errdefs.ErrInvalidArgument, text: "parent subnet is an IPv6 block"},
		{name: "ipv6 range bigger than the subnet", req: v6(network.IPAMConfig{Subnet: p("fd00::/64"), IPRange: p("fd00::/56")}), err: errdefs.ErrInvalidArgument, text: "invalid ip-range fd00::/56"},
		{name: "ipv4 range in an ipv6 subnet", req: v6(network.IPAMConfig{Subnet: p("fd00::/64"), IPRange: p("10.0.0.0/24")}), err: errdefs.ErrInvalidArgument, text: "parent subnet is an IPv6 block"},
		{name: "two ipv6 subnets", req: v6(network.IPAMConfig{Subnet: p("fd00::/64")}, network.IPAMConfig{Subnet: p("fd01::/64")}), err: errdefs.ErrNotImplemented},
		{name: "neither family", req: network.CreateRequest{Name: "n", EnableIPv4: &no}, err: errdefs.ErrInvalidArgument, text: "IPv4 or IPv6 must be enabled"},
		{name: "neither family by option", req: network.CreateRequest{Name: "n", Options: map[string]string{optEnableIPv4: "false"}}, err: errdefs.ErrInvalidArgument, text: "IPv4 or IPv6 must be enabled"},
		{name: "bad family option", req: network.CreateRequest{Name: "n", Options: map[string]string{optEnableIPv6: "maybe"}}, err: errdefs.ErrInvalidArgument, text: `driver-opt "com.docker.network.enable_ipv6" is not a valid bool`},
		{name: "host bits set", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.1/24")})}, err: errdefs.ErrInvalidArgument, text: "invalid subnet 10.9.0.1/24 : it should be 10.9.0.0/24"},
		{name: "tiny subnet", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/31")})}, err: errdefs.ErrInvalidArgument},
		{name: "gateway outside", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24"), Gateway: a("10.8.0.1")})}, err: errdefs.ErrInvalidArgument},
		{name: "gateway is broadcast", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24"), Gateway: a("10.9.0.255")})}, err: errdefs.ErrInvalidArgument},
		{name: "range outside", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24"), IPRange: p("10.9.1.0/25")})}, err: errdefs.ErrInvalidArgument},
		{name: "gateway without subnet", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Gateway: a("10.9.0.1")})}, err: errdefs.ErrInvalidArgument},
		{name: "aux addresses", req: network.CreateRequest{Name: "n", IPAM: ipam(network.IPAMConfig{Subnet: p("10.9.0.0/24"), AuxAddress: map[string]netip.Addr{"a": a("10.9.0.5")}})}, err: errdefs.ErrNotImplemented},
		{name: "ipam driver", req: network.CreateRequest{Name: "n", IPAM: &network.IPAM{Driver: "dhcp"}}, err: errdefs.ErrNotImplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, v6, err := checkCreate(tt.req)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("err = %v, want %v %q", err, tt.err, tt.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Subnet.String() + " " + n.Gateway.String() + " " + n.IPRange.String(); got != tt.want {
				t.Errorf("network %s, want %s", got, tt.want)
			}
			got6 := ""
			if v6 {
				got6 = n.Subnet6.String() + " " + n.Gateway6.String() + " " + n.IPRange6.String()
			}
			if got6 != tt.want6 || n.NoIPv4 != tt.no4 {
				t.Errorf("IPv6 %q (no IPv4 %v), want %q (%v)", got6, n.NoIPv4, tt.want6, tt.no4)
			}
			if _, ok := n.Options[optEnableIPv6]; ok && tt.req.EnableIPv6 != nil {
				t.Errorf("the option %s stays beside the flag", optEnableIPv6)
			}
		})
	}
}

func TestNetworkCreateConflicts(t *testing.T) {
	drv := newFake()
	drv.reserved = []netip.Prefix{netip.MustParsePrefix("172.18.0.0/16")}
	m := newManager(t, drv)
	ctx := context.Background()
	r, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "a", Labels: map[string]string{"team": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := m.NetworkInspect(ctx, r.ID[:5])
	if err != nil || n.Name != "a" || n.IPAM.Config[0].Subnet.String() != "172.19.0.0/16" || n.Scope != "local" || !n.EnableIPv4 || n.Labels["team"] != "x" {
		t.Fatalf("inspect by ID prefix: %+v %v", n, err)
	}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "a"}); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "network with name a already exists") {
		t.Errorf("same name: %v", err)
	}
	overlap := &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("172.19.3.0/24")}}}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "b", IPAM: overlap}); !errors.Is(err, errdefs.ErrPermissionDenied) || !strings.Contains(err.Error(), "Pool overlaps") {
		t.Errorf("overlapping subnet: %v", err)
	}
	if _, err := m.NetworkInspect(ctx, "nosuch"); !errors.Is(err, errdefs.ErrNotFound) || err.Error() != "network nosuch not found" {
		t.Errorf("unknown network: %v", err)
	}
	if err := m.NetworkRemove(ctx, "bridge"); !errors.Is(err, errdefs.ErrPermissionDenied) || err.Error() != "bridge is a pre-defined network and cannot be removed" {
		t.Errorf("removing bridge: %v", err)
	}
	// The record survives a restart.
	m2, err := New(ctx, Options{Root: m.root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if n2, err := m2.NetworkInspect(ctx, "a"); err != nil || n2.ID != r.ID || n2.Labels["team"] != "x" {
		t.Errorf("after a restart: %+v %v", n2, err)
	}
}

func TestNetworkListFilters(t *testing.T) {
	m := newManager(t, newFake())
	ctx := context.Background()
	for _, req := range []network.CreateRequest{
		{Name: "front", Labels: map[string]string{"tier": "web"}},
		{Name: "back", Labels: map[string]string{"tier": "db", "keep": ""}},
		{Name: "backup"},
	} {
		if _, err := m.NetworkCreate(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		filters string
		want    []string
		err     error
	}{
		{"", []string{"back", "backup", "bridge", "front", "host", "none"}, nil},
		{`{"name":{"back":true}}`, []string{"back", "backup"}, nil},
		{`{"name":{"^back$":true}}`, []string{"back"}, nil},
		{`{"label":{"tier":true}}`, []string{"back", "front"}, nil},
		{`{"label":{"tier=db":true}}`, []string{"back"}, nil},
		{`{"label":["tier=db","keep"]}`, []string{"back"}, nil},
		{`{"driver":{"null":true}}`, []string{"none"}, nil},
		{`{"type":{"builtin":true}}`, []string{"bridge", "host", "none"}, nil},
		{`{"type":{"custom":true}}`, []string{"back", "backup", "front"}, nil},
		{`{"scope":{"swarm":true}}`, []string{}, nil},
		{`{"dangling":{"true":true}}`, []string{"back", "backup", "front"}, nil},
		{`{"dangling":{"false":true}}`, []string{"bridge", "host", "none"}, nil},
		{`{"type":{"weird":true}}`, nil, errdefs.ErrInvalidArgument},
		{`{"color":{"red":true}}`, nil, errdefs.ErrInvalidArgument},
		{`{"dangling":{"maybe":true}}`, nil, errdefs.ErrInvalidArgument},
		{`not json`, nil, errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.filters, func(t *testing.T) {
			list, err := m.NetworkList(ctx, tt.filters)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			got := []string{}
			for _, n := range list {
				got = append(got, n.Name)
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("list = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Prune keeps what label!= protects and the predefined networks.
	rep, err := m.NetworkPrune(ctx, `{"label!":{"keep":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.NetworksDeleted)
	if !slices.Equal(rep.NetworksDeleted, []string{"backup", "front"}) {
		t.Errorf("pruned %v", rep.NetworksDeleted)
	}
	rep, err = m.NetworkPrune(ctx, `{"until":{"24h":true}}`)
	if err != nil || len(rep.NetworksDeleted) != 0 {
		t.Errorf("prune of networks older than a day: %v %v", rep.NetworksDeleted, err)
	}
	if _, err := m.NetworkPrune(ctx, `{"name":{"x":true}}`); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("prune with a list filter: %v", err)
	}
}
