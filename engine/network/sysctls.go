package network

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
)

// SysctlsOption is the endpoint driver option that sets sysctls of the
// container's interface on a network (API 1.46): a comma-separated list
// of net.X.Y.IFNAME.Z=value, IFNAME standing for the interface's name,
// which is only known once the endpoint is made.
const SysctlsOption = "com.docker.network.endpoint.sysctls"

// endpointSysctls reads cfg's interface sysctls, each checked for the form
// net.X.Y.IFNAME.Z=value that Docker takes.
func endpointSysctls(cfg *network.EndpointSettings) ([]string, error) {
	if cfg == nil || cfg.DriverOpts[SysctlsOption] == "" {
		return nil, nil
	}
	var out []string
	for _, sc := range strings.Split(cfg.DriverOpts[SysctlsOption], ",") {
		if err := checkIfaceSysctl(sc); err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// checkIfaceSysctl takes what Docker takes: net.X.Y.IFNAME.Z=value with X
// ipv4, ipv6 or mpls, IFNAME also in lower case (the docker CLI lowers
// its --network options); a path separator is refused besides, as the
// name becomes a path under /proc/sys.
func checkIfaceSysctl(sc string) error {
	name := strings.SplitN(sc, ".", 5)
	k, _, found := strings.Cut(sc, "=")
	if len(name) != 5 || name[0] != "net" || (name[1] != "ipv4" && name[1] != "ipv6" && name[1] != "mpls") ||
		(name[3] != "IFNAME" && name[3] != "ifname") || !found || strings.ContainsAny(k, "/\\") {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid endpoint settings:\nunrecognised network interface sysctl '%s'; represent 'net.X.Y.ethN.Z=V' as 'net.X.Y.IFNAME.Z=V', 'X' must be 'ipv4', 'ipv6' or 'mpls'", sc))
	}
	return nil
}
