package network

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/containerd/errdefs"
)

func TestChooseSubnet(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		name string
		used []netip.Prefix
		want string
	}{
		{"nothing used", nil, "172.17.0.0/16"},
		{"default route ignored", []netip.Prefix{p("0.0.0.0/0")}, "172.17.0.0/16"},
		{"docker0 on the host", []netip.Prefix{p("172.17.0.0/16")}, "172.18.0.0/16"},
		{"a smaller route inside", []netip.Prefix{p("172.17.5.0/24"), p("172.18.0.0/16")}, "172.19.0.0/16"},
		{"a wide route", []netip.Prefix{p("172.16.0.0/12")}, "192.168.0.0/20"},
		{"ipv6 ignored", []netip.Prefix{p("fd00::/8")}, "172.17.0.0/16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseSubnet(DefaultPools, tt.used)
			if err != nil || got.String() != tt.want {
				t.Errorf("chooseSubnet = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
	all := []netip.Prefix{p("172.16.0.0/12"), p("192.168.0.0/16")}
	if _, err := chooseSubnet(DefaultPools, all); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("all pools used: %v", err)
	}
	// The defaults, in order: 172.17-31 /16s, then 192.168 /20s.
	var used []netip.Prefix
	for range 31 {
		s, err := chooseSubnet(DefaultPools, used)
		if err != nil {
			t.Fatal(err)
		}
		used = append(used, s)
	}
	if used[0] != p("172.17.0.0/16") || used[14] != p("172.31.0.0/16") || used[15] != p("192.168.0.0/20") || used[30] != p("192.168.240.0/20") {
		t.Errorf("default pools in order: %v", used)
	}
	// default-address-pools: subnets of size bits cut from each base.
	pools := []Pool{{p("10.10.0.0/16"), 24}, {p("10.20.0.0/30"), 30}}
	for _, tc := range []struct {
		used []netip.Prefix
		want string
	}{
		{nil, "10.10.0.0/24"},
		{[]netip.Prefix{p("10.10.0.0/23")}, "10.10.2.0/24"},
		{[]netip.Prefix{p("10.10.0.0/16")}, "10.20.0.0/30"},
		{[]netip.Prefix{p("10.0.0.0/8")}, ""},
	} {
		got, err := chooseSubnet(pools, tc.used)
		if tc.want == "" {
			if !errors.Is(err, errdefs.ErrUnavailable) {
				t.Errorf("pools %v, used %v: %v, %v; want unavailable", pools, tc.used, got, err)
			}
		} else if err != nil || got.String() != tc.want {
			t.Errorf("pools %v, used %v: %v, %v; want %s", pools, tc.used, got, err, tc.want)
		}
	}
}

func TestBroadcast(t *testing.T) {
	for in, want := range map[string]string{"172.17.0.0/16": "172.17.255.255", "10.99.0.0/24": "10.99.0.255", "10.0.0.8/30": "10.0.0.11", "1.2.3.4/32": "1.2.3.4"} {
		if got := broadcast(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("broadcast(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPoolSerial(t *testing.T) {
	a := netip.MustParseAddr
	p := newPool(netip.MustParsePrefix("10.0.0.0/29"), netip.Prefix{}, a("10.0.0.1"))
	var got []string
	for i := range 5 {
		ip, err := p.allocate(string(rune('a' + i)))
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		got = append(got, ip.String())
	}
	want := []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"}
	if len(got) != len(want) || got[0] != want[0] || got[4] != want[4] {
		t.Fatalf("allocated %v, want %v", got, want)
	}
	if _, err := p.allocate("f"); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("full pool: %v", err)
	}
	// A released address is not the next one given, unless it is the only.
	p.release(a("10.0.0.3"))
	p.release(a("10.0.0.5"))
	if ip, _ := p.allocate("g"); ip != a("10.0.0.3") {
		t.Errorf("after wrap-around got %s, want 10.0.0.3 (the first free after the last given)", ip)
	}
	if ip, _ := p.allocate("h"); ip != a("10.0.0.5") {
		t.Errorf("then %s, want 10.0.0.5", ip)
	}
	p.release(a("10.0.0.4"))
	if ip, _ := p.allocate("i"); ip != a("10.0.0.4") {
		t.Errorf("only free address: got %s", ip)
	}
}

func TestPoolRange(t *testing.T) {
	a := netip.MustParseAddr
	p := newPool(netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.1.2.0/30"), a("10.1.0.1"))
	for _, want := range []string{"10.1.2.0", "10.1.2.1", "10.1.2.2", "10.1.2.3"} {
		ip, err := p.allocate("x")
		if err != nil || ip.String() != want {
			t.Fatalf("allocate in range = %v, %v; want %s", ip, err, want)
		}
	}
	if _, err := p.allocate("x"); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("exhausted range: %v", err)
	}
	// Static addresses may be anywhere in the subnet.
	if err := p.reserve(a("10.1.9.9"), "y"); err != nil {
		t.Errorf("static address outside the range: %v", err)
	}
}

func TestPoolReserve(t *testing.T) {
	a := netip.MustParseAddr
	p := newPool(netip.MustParsePrefix("10.0.0.0/24"), netip.Prefix{}, a("10.0.0.1"))
	tests := []struct {
		ip    string
		owner string
		err   error
	}{
		{"10.0.0.7", "a", nil},
		{"10.0.0.7", "a", nil}, // the same owner again (a restart)
		{"10.0.0.7", "b", errdefs.ErrConflict},
		{"10.0.0.1", "b", errdefs.ErrInvalidArgument},   // the gateway
		{"10.0.0.0", "b", errdefs.ErrInvalidArgument},   // the network
		{"10.0.0.255", "b", errdefs.ErrInvalidArgument}, // broadcast
		{"10.0.1.1", "b", errdefs.ErrInvalidArgument},   // outside
	}
	for _, tt := range tests {
		t.Run(tt.ip+"/"+tt.owner, func(t *testing.T) {
			err := p.reserve(a(tt.ip), tt.owner)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("reserve = %v, want %v", err, tt.err)
			}
		})
	}
	if ip, _ := p.allocate("c"); ip != a("10.0.0.2") {
		t.Errorf("allocate after reserve: %s", ip)
	}
}

func TestMACFromIP(t *testing.T) {
	if got := macFor(netip.MustParseAddr("172.17.0.2")).String(); got != "02:42:ac:11:00:02" {
		t.Errorf("mac = %s", got)
	}
}
