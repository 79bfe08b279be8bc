package apiserver

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	enet "github.com/hutch-engine/hutch/engine/network"
)

// migrateIfaceSysctls moves --sysctl settings that name an interface
// (net.X.Y.eth0.Z) to the endpoint driver option that sets them once the
// interface exists, as Docker does: before API 1.48 those of eth0 go to the
// endpoint of the container's network mode (one for another interface is
// refused: its name is not known in advance); from 1.48 they must come as
// the driver option.
func migrateIfaceSysctls(version string, req *containertypes.CreateRequest) error {
	hc := req.HostConfig
	if hc == nil || len(hc.Sysctls) == 0 || !hc.NetworkMode.IsPrivate() {
		return nil
	}
	var moved []string
	for _, k := range slices.Sorted(maps.Keys(hc.Sysctls)) {
		spl := strings.SplitN(k, ".", 5)
		if len(spl) != 5 || spl[0] != "net" || !strings.HasPrefix(spl[3], "eth") {
			continue
		}
		if !versionLess(version, "1.48") {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("interface specific sysctl setting %q must be supplied using driver option '%s'", k, enet.SysctlsOption))
		}
		if spl[3] != "eth0" {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("unable to determine network endpoint for sysctl %s, use driver option '%s' to set per-interface sysctls", k, enet.SysctlsOption))
		}
		moved = append(moved, fmt.Sprintf("net.%s.%s.IFNAME.%s=%s", spl[1], spl[2], spl[4], hc.Sysctls[k]))
		delete(hc.Sysctls, k)
	}
	if len(moved) == 0 {
		return nil
	}
	name := string(hc.NetworkMode)
	if hc.NetworkMode.IsDefault() || name == "" {
		name = network.NetworkBridge
	}
	if req.NetworkingConfig == nil {
		req.NetworkingConfig = &network.NetworkingConfig{}
	}
	if req.NetworkingConfig.EndpointsConfig == nil {
		req.NetworkingConfig.EndpointsConfig = map[string]*network.EndpointSettings{}
	}
	ep := req.NetworkingConfig.EndpointsConfig[name]
	if ep == nil {
		ep = &network.EndpointSettings{}
		req.NetworkingConfig.EndpointsConfig[name] = ep
	}
	if ep.DriverOpts == nil {
		ep.DriverOpts = map[string]string{}
	}
	// The endpoint's own settings win over the migrated ones.
	if own := ep.DriverOpts[enet.SysctlsOption]; own != "" {
		moved = append(moved, own)
	}
	ep.DriverOpts[enet.SysctlsOption] = strings.Join(moved, ",")
	return nil
}
