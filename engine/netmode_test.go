package engine

import (
	"net/netip"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestValidateNetMode(t *testing.T) {
	shared := containertypes.NetworkMode("container:db")
	port := network.MustParsePort("80/tcp")
	for _, tc := range []struct {
		name string
		cfg  containertypes.Config
		hc   containertypes.HostConfig
		err  string
	}{
		{name: "alone", hc: containertypes.HostConfig{NetworkMode: shared}},
		{name: "no container", hc: containertypes.HostConfig{NetworkMode: "container:"}, err: "invalid network mode: invalid container format container:<name|id>"},
		{name: "hostname", cfg: containertypes.Config{Hostname: "h"}, hc: containertypes.HostConfig{NetworkMode: shared}, err: "conflicting options: hostname and the network mode"},
		{name: "links", hc: containertypes.HostConfig{NetworkMode: shared, Links: []string{"a:b"}}, err: "conflicting options: container type network can't be used with links. This would result in undefined behavior"},
		{name: "dns", hc: containertypes.HostConfig{NetworkMode: shared, DNS: []netip.Addr{netip.MustParseAddr("192.0.2.53")}}, err: "conflicting options: dns and the network mode"},
		{name: "dns search", hc: containertypes.HostConfig{NetworkMode: shared, DNSSearch: []string{"x"}}},
		{name: "extra hosts", hc: containertypes.HostConfig{NetworkMode: shared, ExtraHosts: []string{"a:1.2.3.4"}}, err: "conflicting options: custom host-to-IP mapping and the network mode"},
		{name: "publish all", hc: containertypes.HostConfig{NetworkMode: shared, PublishAllPorts: true}, err: "conflicting options: port publishing and the container type network mode"},
		{name: "publish", hc: containertypes.HostConfig{NetworkMode: shared, PortBindings: network.PortMap{port: nil}}, err: "conflicting options: port publishing and the container type network mode"},
		{name: "expose", cfg: containertypes.Config{ExposedPorts: network.PortSet{port: {}}}, hc: containertypes.HostConfig{NetworkMode: shared}, err: "conflicting options: port exposing and the container type network mode"},
		// Docker's order: the first conflict is the one named.
		{name: "hostname and links", cfg: containertypes.Config{Hostname: "h"}, hc: containertypes.HostConfig{NetworkMode: shared, Links: []string{"a:b"}}, err: "conflicting options: hostname and the network mode"},
		{name: "uts host", cfg: containertypes.Config{Hostname: "h"}, hc: containertypes.HostConfig{UTSMode: "host"}, err: "conflicting options: hostname and the UTS mode"},
		{name: "bridge with everything", cfg: containertypes.Config{Hostname: "h", ExposedPorts: network.PortSet{port: {}}}, hc: containertypes.HostConfig{NetworkMode: "bridge", Links: []string{"a:b"}, ExtraHosts: []string{"a:1.2.3.4"}, PublishAllPorts: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateNetMode(&tc.cfg, &tc.hc)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errdefs.IsInvalidArgument(err) || err.Error() != tc.err {
				t.Fatalf("err = %v, want invalid argument %q", err, tc.err)
			}
		})
	}
}
