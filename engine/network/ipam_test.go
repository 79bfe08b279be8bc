package network

import (
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
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
			got, err := chooseSubnet(DefaultPools, tt.used, false)
			if err != nil || got.String() != tt.want {
				t.Errorf("chooseSubnet = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
	all := []netip.Prefix{p("172.16.0.0/12"), p("192.168.0.0/16")}
	if _, err := chooseSubnet(DefaultPools, all, false); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("all pools used: %v", err)
	}
	// The defaults, in order: 172.17-31 /16s, then 192.168 /20s.
	var used []netip.Prefix
	for range 31 {
		s, err := chooseSubnet(DefaultPools, used, false)
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
		got, err := chooseSubnet(pools, tc.used, false)
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

// The IPv6 pool of an engine without one, as Docker derives it: the 40
// bits of fd00::/8's global ID are the low 40 of the first 64 of the
// SHA-256 of the engine's ID (values computed apart, with Python's
// hashlib).
func TestULAPool(t *testing.T) {
	for id, want := range map[string]string{
		"":                                     "fd42:98fc:1c14::/48",
		"b1c2e3f4-0000-4000-8000-000000000001": "fd42:e6f3:1ea5::/48",
	} {
		if got := ULAPool(id); got.Base.String() != want || got.Size != 64 {
			t.Errorf("ULAPool(%q) = %v /%d, want %s /64", id, got.Base, got.Size, want)
		}
	}
	if ULAPool("a") == ULAPool("b") {
		t.Error("two engines share a pool")
	}
}

func TestChooseSubnetIPv6(t *testing.T) {
	p := netip.MustParsePrefix
	ula := []Pool{DefaultPools[0], {p("fd42:98fc:1c14::/48"), 64}}
	tests := []struct {
		name  string
		pools []Pool
		used  []netip.Prefix
		want  string
	}{
		{"first /64", ula, nil, "fd42:98fc:1c14::/64"},
		{"ipv4 ignored", ula, []netip.Prefix{p("172.17.0.0/16"), p("0.0.0.0/0")}, "fd42:98fc:1c14::/64"},
		{"default route ignored", ula, []netip.Prefix{p("::/0")}, "fd42:98fc:1c14::/64"},
		{"next after one used", ula, []netip.Prefix{p("fd42:98fc:1c14::/64")}, "fd42:98fc:1c14:1::/64"},
		{"a smaller one inside", ula, []netip.Prefix{p("fd42:98fc:1c14::80/121")}, "fd42:98fc:1c14:1::/64"},
		{"a wider one skipped at once", ula, []netip.Prefix{p("fd42:98fc:1c14::/56")}, "fd42:98fc:1c14:100::/64"},
		{"the whole pool", ula, []netip.Prefix{p("fd00::/8")}, ""},
		// 2^56 candidates, the first 2^48 of them used: found without
		// walking them.
		{"a huge pool", []Pool{{p("fd00::/8"), 64}}, []netip.Prefix{p("fd00::/16"), p("fd01::/64")}, "fd01:0:0:1::/64"},
		{"the last subnet of the address space", []Pool{{p("ffff:ffff:ffff:fffe::/63"), 64}}, []netip.Prefix{p("ffff:ffff:ffff:fffe::/64")}, "ffff:ffff:ffff:ffff::/64"},
		{"nothing after the end of the address space", []Pool{{p("ffff:ffff:ffff:fffe::/63"), 64}}, []netip.Prefix{p("ffff:ffff:ffff:fffe::/63")}, ""},
		{"no ipv6 pool", DefaultPools, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseSubnet(tt.pools, tt.used, true)
			if tt.want == "" {
				if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "IPv6") {
					t.Errorf("chooseSubnet = %v, %v; want unavailable", got, err)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Errorf("chooseSubnet = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestLastAddr(t *testing.T) {
	for in, want := range map[string]string{
		"fd00::/64":                              "fd00::ffff:ffff:ffff:ffff",
		"fd2e:b68c:ce26::/56":                    "fd2e:b68c:ce26:ff:ffff:ffff:ffff:ffff",
		"fda9:8d04:86e::ffff:ffff:ffff:fffe/127": "fda9:8d04:86e:0:ffff:ffff:ffff:ffff",
		"::/0":                                   "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		"fd00::5/128":                            "fd00::5",
		"10.0.0.0/8":                             "10.255.255.255",
	} {
		if got := lastAddr(netip.MustParsePrefix(in)).String(); got != want {
			t.Errorf("lastAddr(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestPoolIPv6(t *testing.T) {
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	tests := []struct {
		name, subnet, rng, gw string
		want                  []string // the addresses given in turn; "full" for none left
	}{
		{"from the start", "fd00:1::/64", "", "fd00:1::1", []string{"fd00:1::2", "fd00:1::3"}},
		// A range of two at the end of a /64: the last address of an IPv6
		// subnet is a host's (no broadcast).
		{"range at the end of a /64", "fda9:8d04:86e::/64", "fda9:8d04:86e::ffff:ffff:ffff:fffe/127", "fda9:8d04:86e::1",
			[]string{"fda9:8d04:86e:0:ffff:ffff:ffff:fffe", "fda9:8d04:86e:0:ffff:ffff:ffff:ffff", "full"}},
		{"range before the end", "fda9:8d04:86e::/64", "fda9:8d04:86e::ffff:ffff:ffff:ff0e/127", "fda9:8d04:86e::1",
			[]string{"fda9:8d04:86e:0:ffff:ffff:ffff:ff0e", "fda9:8d04:86e:0:ffff:ffff:ffff:ff0f", "full"}},
		{"range at a 64-bit boundary in a /56", "fda9:8d04:86e::/56", "fda9:8d04:86e:aa:ffff:ffff:ffff:fffe/127", "fda9:8d04:86e::1",
			[]string{"fda9:8d04:86e:aa:ffff:ffff:ffff:fffe", "fda9:8d04:86e:aa:ffff:ffff:ffff:ffff", "full"}},
		{"/64 range in a /56", "fd2e:b68c:ce26::/56", "fd2e:b68c:ce26::/64", "fd2e:b68c:ce26::1", []string{"fd2e:b68c:ce26::2"}},
		// The subnet-router anycast address (the subnet's own) and the
		// gateway are never given.
		{"tiny subnet", "fd00::/126", "", "fd00::1", []string{"fd00::2", "fd00::3", "full"}},
		{"gateway at the end", "fd00::/126", "", "fd00::3", []string{"fd00::1", "fd00::2", "full"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rng netip.Prefix
			if tt.rng != "" {
				rng = p(tt.rng)
			}
			pl := newPool(p(tt.subnet), rng, a(tt.gw))
			for i, want := range tt.want {
				ip, err := pl.allocate("c")
				if want == "full" {
					if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "IPv6") {
						t.Errorf("allocation %d = %v, %v; want none left", i, ip, err)
					}
					continue
				}
				if err != nil || ip.String() != want {
					t.Errorf("allocation %d = %v, %v; want %s", i, ip, err, want)
				}
			}
		})
	}
	pl := newPool(p("fd00::/64"), netip.Prefix{}, a("fd00::1"))
	for _, tt := range []struct {
		ip  string
		err error
	}{
		{"fd00::ffff:ffff:ffff:ffff", nil},
		{"fd00::", errdefs.ErrInvalidArgument},
		{"fd00::1", errdefs.ErrInvalidArgument},
		{"fd00:0:0:1::2", errdefs.ErrInvalidArgument},
		{"fd00::ffff:ffff:ffff:ffff", nil},
	} {
		if err := pl.reserve(a(tt.ip), "x"); tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("reserve %s = %v, want %v", tt.ip, err, tt.err)
		}
	}
	pl.release(a("fd00::ffff:ffff:ffff:ffff"))
	var nilPool *pool
	nilPool.release(a("fd00::2")) // a network without the family
}

func TestMACFromIPv6(t *testing.T) {
	// The last four bytes, on a network without IPv4.
	if got := macFor(netip.MustParseAddr("fd00::ac11:2")).String(); got != "02:42:ac:11:00:02" {
		t.Errorf("mac = %s", got)
	}
}

// Network inspect counts each subnet's addresses as Docker does: those
// in use, the subnet's own reserved ones included, and those its range
// has left for dynamic allocation.
func TestSubnetStatus(t *testing.T) {
	for _, tc := range []struct {
		subnet, rng, gw string
		used            []string
		want            network.SubnetStatus
	}{
		// network address, gateway, broadcast; a /31 range of 2.
		{"192.168.0.0/24", "192.168.0.64/31", "192.168.0.1", nil, network.SubnetStatus{IPsInUse: 3, DynamicIPsAvailable: 2}},
		{"192.168.0.0/24", "192.168.0.64/31", "192.168.0.1", []string{"192.168.0.64", "192.168.0.129"}, network.SubnetStatus{IPsInUse: 5, DynamicIPsAvailable: 1}},
		// subnet-router anycast and gateway, both in the /120 range.
		{"2001:db8:abcd::/64", "2001:db8:abcd::/120", "2001:db8:abcd::1", []string{"2001:db8:abcd::2"}, network.SubnetStatus{IPsInUse: 3, DynamicIPsAvailable: 253}},
		{"fd00::/64", "", "fd00::1", nil, network.SubnetStatus{IPsInUse: 2, DynamicIPsAvailable: math.MaxUint64 - 2}},
	} {
		var rng netip.Prefix
		if tc.rng != "" {
			rng = netip.MustParsePrefix(tc.rng)
		}
		p := newPool(netip.MustParsePrefix(tc.subnet), rng, netip.MustParseAddr(tc.gw))
		for _, a := range tc.used {
			if err := p.reserve(netip.MustParseAddr(a), "c"+a); err != nil {
				t.Fatal(err)
			}
		}
		if got := p.status(); got != tc.want {
			t.Errorf("%s range %s used %v: %+v, want %+v", tc.subnet, tc.rng, tc.used, got, tc.want)
		}
	}
}
