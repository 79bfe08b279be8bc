package network

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
)

func TestEndpointSysctls(t *testing.T) {
	opt := func(v string) *network.EndpointSettings {
		return &network.EndpointSettings{DriverOpts: map[string]string{SysctlsOption: v}}
	}
	if got, err := endpointSysctls(opt("net.ipv4.conf.IFNAME.forwarding=1,net.ipv6.conf.ifname.accept_ra=2")); err != nil || len(got) != 2 {
		t.Errorf("good sysctls: %v %v", got, err)
	}
	for _, bad := range []string{"net.ipv4.conf.eth0.forwarding=1", "net.ipv4.conf.IFNAME.forwarding", "kernel.x.y.IFNAME.z=1", "net.ipv4.conf.IFNAME.a/b=1", "net.ipv4.IFNAME.x=1", "net.core.conf.IFNAME.x=1"} {
		if _, err := endpointSysctls(opt(bad)); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
