package apiserver

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestMigrateIfaceSysctls(t *testing.T) {
	req := func(mode string, sysctls map[string]string, eps map[string]*network.EndpointSettings) *containertypes.CreateRequest {
		r := &containertypes.CreateRequest{HostConfig: &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(mode), Sysctls: sysctls}}
		if eps != nil {
			r.NetworkingConfig = &network.NetworkingConfig{EndpointsConfig: eps}
		}
		return r
	}
	// Before 1.48, eth0's go to the network mode's endpoint, after the
	// endpoint's own.
	r := req("app", map[string]string{"net.ipv4.conf.eth0.log_martians": "1", "net.core.somaxconn": "99"},
		map[string]*network.EndpointSettings{"app": {DriverOpts: map[string]string{"com.docker.network.endpoint.sysctls": "net.ipv6.conf.IFNAME.accept_ra=2"}}})
	if err := migrateIfaceSysctls("1.47", r); err != nil {
		t.Fatal(err)
	}
	if got := r.NetworkingConfig.EndpointsConfig["app"].DriverOpts["com.docker.network.endpoint.sysctls"]; got != "net.ipv4.conf.IFNAME.log_martians=1,net.ipv6.conf.IFNAME.accept_ra=2" {
		t.Errorf("migrated: %q", got)
	}
	if _, left := r.HostConfig.Sysctls["net.ipv4.conf.eth0.log_martians"]; left || r.HostConfig.Sysctls["net.core.somaxconn"] != "99" {
		t.Errorf("sysctls left: %v", r.HostConfig.Sysctls)
	}
	// The default network mode is the bridge's endpoint, made if need be.
	r = req("default", map[string]string{"net.ipv4.conf.eth0.forwarding": "1"}, nil)
	if err := migrateIfaceSysctls("1.46", r); err != nil || r.NetworkingConfig.EndpointsConfig["bridge"].DriverOpts["com.docker.network.endpoint.sysctls"] != "net.ipv4.conf.IFNAME.forwarding=1" {
		t.Errorf("default mode: %v %+v", err, r.NetworkingConfig)
	}
	for _, tc := range []struct {
		version, key, msg string
	}{
		{"1.47", "net.ipv4.conf.eth1.forwarding", "unable to determine network endpoint for sysctl net.ipv4.conf.eth1.forwarding, use driver option 'com.docker.network.endpoint.sysctls' to set per-interface sysctls"},
		{"1.48", "net.ipv4.conf.eth0.forwarding", `interface specific sysctl setting "net.ipv4.conf.eth0.forwarding" must be supplied using driver option 'com.docker.network.endpoint.sysctls'`},
	} {
		err := migrateIfaceSysctls(tc.version, req("bridge", map[string]string{tc.key: "1"}, nil))
		if !errors.Is(err, errdefs.ErrInvalidArgument) || err.Error() != tc.msg {
			t.Errorf("%s at %s: %v", tc.key, tc.version, err)
		}
	}
	// host mode keeps its sysctls: there is no endpoint.
	r = req("host", map[string]string{"net.ipv4.conf.eth0.forwarding": "1"}, nil)
	if err := migrateIfaceSysctls("1.56", r); err != nil || r.HostConfig.Sysctls["net.ipv4.conf.eth0.forwarding"] != "1" {
		t.Errorf("host mode: %v %v", err, r.HostConfig.Sysctls)
	}
}
