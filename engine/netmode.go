package engine

import (
	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

// validateNetMode refuses, at create, what a container that shares
// another's network (--network container:<ref>) cannot have, and a
// hostname beside the host's UTS namespace, in the order and words of
// Docker's runconfig (validateNetMode, validateNetContainerMode). cfg is
// the request's config, before the image's is merged in: an image's
// EXPOSE does not conflict, a --expose does.
func validateNetMode(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	mode := hc.NetworkMode
	invalid := func(msg string) error { return errdefs.ErrInvalidArgument.WithMessage(msg) }
	if mode.IsContainer() {
		switch {
		case mode.ConnectedContainer() == "":
			return invalid("invalid network mode: invalid container format container:<name|id>")
		case cfg.Hostname != "":
			return invalid("conflicting options: hostname and the network mode")
		case len(hc.Links) > 0:
			return invalid("conflicting options: container type network can't be used with links. This would result in undefined behavior")
		case len(hc.DNS) > 0:
			// Its queries come from the other container's address: that
			// one's servers answer them.
			return invalid("conflicting options: dns and the network mode")
		case len(hc.ExtraHosts) > 0:
			return invalid("conflicting options: custom host-to-IP mapping and the network mode")
		case len(hc.PortBindings) > 0 || hc.PublishAllPorts:
			return invalid("conflicting options: port publishing and the container type network mode")
		case len(cfg.ExposedPorts) > 0:
			return invalid("conflicting options: port exposing and the container type network mode")
		}
	}
	if hc.UTSMode.IsHost() && cfg.Hostname != "" {
		return invalid("conflicting options: hostname and the UTS mode")
	}
	if mode.IsHost() && len(hc.Links) > 0 {
		return invalid("conflicting options: host type networking can't be used with links. This would result in undefined behavior")
	}
	return nil
}
