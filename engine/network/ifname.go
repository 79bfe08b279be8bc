package network

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/network"
)

// IfnameOption is the endpoint driver option that names the container's
// interface on a network (Compose's interface_name), as Docker reads it.
const IfnameOption = "com.docker.network.endpoint.ifname"

// maxIfnameLen is the kernel's limit on an interface name (IFNAMSIZ-1).
const maxIfnameLen = 15

// checkIfname refuses a name the kernel would not take for an interface.
func checkIfname(name string) error {
	switch {
	case len(name) > maxIfnameLen:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid interface name %q: longer than %d bytes", name, maxIfnameLen))
	case name == "." || name == ".." || strings.ContainsAny(name, "/:") || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid interface name %q", name))
	}
	return nil
}

// ifnameLocked picks the name of container c's interface for a new
// endpoint of sb: the one cfg asks for, which no other endpoint of the
// container may have, else, as Docker names them, the lowest ethN that no
// endpoint has and no other endpoint of c's asks for.
func (m *Manager) ifnameLocked(sb *sandbox, c *container.Container, cfg *network.EndpointSettings) (string, error) {
	used := map[string]bool{}
	for _, id := range sb.order {
		if n := m.nets[id]; n != nil && n.eps[sb.id] != nil {
			used[n.eps[sb.id].IfName] = true
		}
	}
	if name := askedIfname(cfg); name != "" {
		if err := checkIfname(name); err != nil {
			return "", err
		}
		if used[name] {
			return "", errdefs.ErrConflict.WithMessage(fmt.Sprintf("interface name %s is already in use in the container", name))
		}
		return name, nil
	}
	if c.NetworkSettings != nil {
		for _, other := range c.NetworkSettings.Networks {
			if name := askedIfname(other); name != "" {
				used[name] = true
			}
		}
	}
	for i := 0; ; i++ {
		if name := fmt.Sprintf("eth%d", i); !used[name] {
			return name, nil
		}
	}
}

func askedIfname(cfg *network.EndpointSettings) string {
	if cfg == nil {
		return ""
	}
	return cfg.DriverOpts[IfnameOption]
}
