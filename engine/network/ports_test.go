package network

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestParseHostPort(t *testing.T) {
	tests := []struct {
		in         string
		start, end uint16
		ok         bool
	}{
		{"", 0, 0, true},
		{"0", 0, 0, true},
		{"8080", 8080, 8080, true},
		{"8000-8010", 8000, 8010, true},
		{"8000-8000", 8000, 8000, true},
		{"8010-8000", 0, 0, false},
		{"0-10", 0, 0, false},
		{"65536", 0, 0, false},
		{"http", 0, 0, false},
		{"-1", 0, 0, false},
		{"80-", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			s, e, err := parseHostPort(tt.in)
			if tt.ok != (err == nil) || s != tt.start || e != tt.end {
				t.Errorf("parseHostPort(%q) = %d, %d, %v", tt.in, s, e, err)
			}
			if err != nil && !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("error class: %v", err)
			}
		})
	}
}

func TestPlanPorts(t *testing.T) {
	p := network.MustParsePort
	lo := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name    string
		exposed []string
		pb      network.PortMap
		all     bool
		want    string // bindings, then exposed ports
		err     error
	}{
		{name: "none", want: "[] []"},
		{name: "host ip and port", pb: network.PortMap{p("80/tcp"): {{HostIP: lo, HostPort: "8080"}}}, want: "[80/tcp@127.0.0.1:8080-8080] []"},
		{name: "udp and random", pb: network.PortMap{p("53/udp"): {{}}, p("80"): {{HostPort: "0"}}}, want: "[53/udp@invalid IP:0-0 80/tcp@invalid IP:0-0] []"},
		{name: "two bindings of one port", pb: network.PortMap{p("80"): {{HostIP: lo, HostPort: "1"}, {HostPort: "2-3"}}}, want: "[80/tcp@127.0.0.1:1-1 80/tcp@invalid IP:2-3] []"},
		{name: "exposed only", exposed: []string{"443/tcp", "80/tcp"}, want: "[] [80/tcp 443/tcp]"},
		{name: "publish all", exposed: []string{"443/tcp", "80/tcp"}, pb: network.PortMap{p("80"): {{HostPort: "8080"}}}, all: true, want: "[80/tcp@invalid IP:8080-8080 443/tcp@invalid IP:0-0] []"},
		{name: "empty binding list is exposed", pb: network.PortMap{p("80"): {}}, want: "[] [80/tcp]"},
		{name: "bad host port", pb: network.PortMap{p("80"): {{HostPort: "x"}}}, err: errdefs.ErrInvalidArgument},
		{name: "sctp", pb: network.PortMap{p("80/sctp"): {{}}}, err: errdefs.ErrNotImplemented},
		{name: "unknown proto", exposed: []string{"80/icmp"}, all: true, err: errdefs.ErrInvalidArgument},
		{name: "port zero", pb: network.PortMap{p("0"): {{}}}, err: errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &containertypes.Config{ExposedPorts: network.PortSet{}}
			for _, e := range tt.exposed {
				cfg.ExposedPorts[p(e)] = struct{}{}
			}
			plan, err := planPorts(cfg, &containertypes.HostConfig{PortBindings: tt.pb, PublishAllPorts: tt.all})
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var bs []string
			for _, b := range plan.bindings {
				bs = append(bs, fmt.Sprintf("%s@%s:%d-%d", b.port, b.hostIP, b.start, b.end))
			}
			if bs == nil {
				bs = []string{}
			}
			ex := plan.exposed
			if ex == nil {
				ex = []network.Port{}
			}
			if got := fmt.Sprintf("%v %v", bs, ex); got != tt.want {
				t.Errorf("plan = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestShownBindings(t *testing.T) {
	for _, tt := range []struct {
		f    Forward
		want string
	}{
		{Forward{HostPort: 80, HostIP: netip.MustParseAddr("127.0.0.1")}, "[{127.0.0.1 80}]"},
		{Forward{HostPort: 80}, "[{0.0.0.0 80}]"},
		{Forward{HostPort: 80, DualStack: true}, "[{0.0.0.0 80} {:: 80}]"},
	} {
		if got := fmt.Sprint(shownBindings(tt.f)); got != tt.want {
			t.Errorf("shownBindings(%+v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}
