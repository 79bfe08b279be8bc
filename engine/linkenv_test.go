package engine

import (
	"slices"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestLinkEnv(t *testing.T) {
	ports := func(ps ...string) network.PortSet {
		set := network.PortSet{}
		for _, p := range ps {
			set[network.MustParsePort(p)] = struct{}{}
		}
		return set
	}
	tests := []struct {
		name  string
		child *containertypes.Config
		want  []string
	}{
		{name: "no ports", child: &containertypes.Config{Env: []string{"PATH=/bin", "HOME=/root", "PASSWORD=s=cret", "BARE"}},
			want: []string{"DB_NAME=/web/db", "DB_ENV_PASSWORD=s=cret"}},
		{name: "one port", child: &containertypes.Config{ExposedPorts: ports("5432/tcp")}, want: []string{
			"DB_PORT=tcp://172.17.0.3:5432",
			"DB_PORT_5432_TCP=tcp://172.17.0.3:5432", "DB_PORT_5432_TCP_ADDR=172.17.0.3", "DB_PORT_5432_TCP_PORT=5432", "DB_PORT_5432_TCP_PROTO=tcp",
			"DB_NAME=/web/db",
		}},
		{name: "tcp first, a range, a gap", child: &containertypes.Config{ExposedPorts: ports("53/udp", "81/tcp", "80/tcp", "90/tcp")}, want: []string{
			"DB_PORT=tcp://172.17.0.3:80",
			"DB_PORT_80_TCP=tcp://172.17.0.3:80", "DB_PORT_80_TCP_ADDR=172.17.0.3", "DB_PORT_80_TCP_PORT=80", "DB_PORT_80_TCP_PROTO=tcp",
			"DB_PORT_81_TCP=tcp://172.17.0.3:81", "DB_PORT_81_TCP_ADDR=172.17.0.3", "DB_PORT_81_TCP_PORT=81", "DB_PORT_81_TCP_PROTO=tcp",
			"DB_PORT_90_TCP=tcp://172.17.0.3:90", "DB_PORT_90_TCP_ADDR=172.17.0.3", "DB_PORT_90_TCP_PORT=90", "DB_PORT_90_TCP_PROTO=tcp",
			"DB_PORT_80_TCP_START=tcp://172.17.0.3:80", "DB_PORT_80_TCP_PORT_START=80", "DB_PORT_80_TCP_END=tcp://172.17.0.3:81", "DB_PORT_80_TCP_PORT_END=81",
			"DB_PORT_53_UDP=udp://172.17.0.3:53", "DB_PORT_53_UDP_ADDR=172.17.0.3", "DB_PORT_53_UDP_PORT=53", "DB_PORT_53_UDP_PROTO=udp",
			"DB_NAME=/web/db",
		}},
		{name: "a range at the end", child: &containertypes.Config{ExposedPorts: ports("7000/tcp", "7001/tcp")}, want: []string{
			"DB_PORT=tcp://172.17.0.3:7000",
			"DB_PORT_7000_TCP=tcp://172.17.0.3:7000", "DB_PORT_7000_TCP_ADDR=172.17.0.3", "DB_PORT_7000_TCP_PORT=7000", "DB_PORT_7000_TCP_PROTO=tcp",
			"DB_PORT_7001_TCP=tcp://172.17.0.3:7001", "DB_PORT_7001_TCP_ADDR=172.17.0.3", "DB_PORT_7001_TCP_PORT=7001", "DB_PORT_7001_TCP_PROTO=tcp",
			"DB_PORT_7000_TCP_START=tcp://172.17.0.3:7000", "DB_PORT_7000_TCP_PORT_START=7000", "DB_PORT_7000_TCP_END=tcp://172.17.0.3:7001", "DB_PORT_7000_TCP_PORT_END=7001",
			"DB_NAME=/web/db",
		}},
	}
	for _, tt := range tests {
		if got := linkEnv("/web/db", "172.17.0.3", tt.child); !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	// The alias is upper-cased, its dashes become underscores.
	if got := linkEnv("/web/my-db", "10.0.0.2", nil); !slices.Equal(got, []string{"MY_DB_NAME=/web/my-db"}) {
		t.Errorf("dashed alias: %q", got)
	}
}
