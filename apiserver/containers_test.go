package apiserver

import (
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

func TestAdaptCreateRequest(t *testing.T) {
	twoNets := func() *network.NetworkingConfig {
		return &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"net2": {}, "net1": {}}}
	}
	tests := []struct {
		version string
		hc      *containertypes.HostConfig
		nc      *network.NetworkingConfig
		ipc     containertypes.IpcMode
		err     string
	}{
		{version: "1.39", ipc: "shareable"},
		{version: "1.39", hc: &containertypes.HostConfig{}, ipc: "shareable"},
		{version: "1.39", hc: &containertypes.HostConfig{IpcMode: "private"}, ipc: "private"},
		{version: "1.40", hc: &containertypes.HostConfig{}, ipc: ""},
		{version: "1.44", hc: &containertypes.HostConfig{}, nc: twoNets()},
		{version: "1.43", hc: &containertypes.HostConfig{}, nc: twoNets(), err: "Container cannot be created with multiple network endpoints: net1, net2"},
		{version: "1.43", hc: &containertypes.HostConfig{}, nc: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"net1": {}}}},
	}
	for _, tt := range tests {
		req := containertypes.CreateRequest{HostConfig: tt.hc, NetworkingConfig: tt.nc}
		err := adaptCreateRequest(tt.version, &req)
		switch {
		case tt.err != "":
			if !errdefs.IsInvalidArgument(err) || err.Error() != tt.err {
				t.Errorf("%s: error %v, want %q", tt.version, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.version, err)
		case req.HostConfig == nil && tt.ipc != "":
			t.Errorf("%s: no host config", tt.version)
		case req.HostConfig != nil && req.HostConfig.IpcMode != tt.ipc:
			t.Errorf("%s: IpcMode %q, want %q", tt.version, req.HostConfig.IpcMode, tt.ipc)
		}
	}
}
