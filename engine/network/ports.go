package network

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// binding is one host port to publish for a container port.
type binding struct {
	port   network.Port
	hostIP netip.Addr
	// start..end is the host port range; 0..0 is any free port.
	start, end uint16
}

// portPlan is what a container publishes: the bindings, and the exposed
// ports that are not published (shown with no binding).
type portPlan struct {
	bindings []binding
	exposed  []network.Port
}

// planPorts reads the container's published ports: HostConfig's
// PortBindings, and with PublishAllPorts (-P) every exposed port on a
// random host port. Errors are errdefs.ErrInvalidArgument.
func planPorts(cfg *containertypes.Config, hc *containertypes.HostConfig) (portPlan, error) {
	var plan portPlan
	bound := map[network.Port]bool{}
	for _, p := range sortedPorts(hc.PortBindings) {
		if err := checkProto(p); err != nil {
			return plan, err
		}
		bound[p] = true
		bs := hc.PortBindings[p]
		if len(bs) == 0 {
			plan.exposed = append(plan.exposed, p)
			continue
		}
		for _, b := range bs {
			start, end, err := parseHostPort(b.HostPort)
			if err != nil {
				return plan, err
			}
			if b.HostIP.IsValid() && !b.HostIP.Is4() && !b.HostIP.Is6() {
				return plan, fmt.Errorf("invalid host IP %s: %w", b.HostIP, errdefs.ErrInvalidArgument)
			}
			plan.bindings = append(plan.bindings, binding{port: p, hostIP: b.HostIP.Unmap(), start: start, end: end})
		}
	}
	var exposed []network.Port
	if cfg != nil {
		for p := range cfg.ExposedPorts {
			exposed = append(exposed, p)
		}
	}
	slices.SortFunc(exposed, comparePorts)
	for _, p := range exposed {
		if bound[p] {
			continue
		}
		if err := checkProto(p); err != nil {
			return plan, err
		}
		if hc.PublishAllPorts {
			plan.bindings = append(plan.bindings, binding{port: p})
		} else {
			plan.exposed = append(plan.exposed, p)
		}
	}
	return plan, nil
}

// parseHostPort reads "", "0", "8080" or "8000-8010".
func parseHostPort(s string) (start, end uint16, err error) {
	if s == "" {
		return 0, 0, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(lo, 10, 16)
	b := a
	var err2 error
	if isRange {
		b, err2 = strconv.ParseUint(hi, 10, 16)
	}
	if err1 != nil || err2 != nil || b < a || (a == 0 && b != 0) {
		return 0, 0, fmt.Errorf("invalid port specification: %q: %w", s, errdefs.ErrInvalidArgument)
	}
	return uint16(a), uint16(b), nil
}

func checkProto(p network.Port) error {
	if p.Num() == 0 {
		return fmt.Errorf("invalid port %s: a container port cannot be 0: %w", p, errdefs.ErrInvalidArgument)
	}
	switch p.Proto() {
	case network.TCP, network.UDP:
		return nil
	case network.SCTP:
		return fmt.Errorf("publishing sctp port %s is not supported: the rootless port driver forwards tcp and udp: %w", p, errdefs.ErrNotImplemented)
	}
	return fmt.Errorf("invalid proto %q in port %s: %w", p.Proto(), p, errdefs.ErrInvalidArgument)
}

func comparePorts(a, b network.Port) int {
	return cmp.Or(cmp.Compare(a.Num(), b.Num()), cmp.Compare(a.Proto(), b.Proto()))
}

func sortedPorts(m network.PortMap) []network.Port {
	out := make([]network.Port, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, comparePorts)
	return out
}

// shownBindings is how a forward appears in NetworkSettings.Ports: a port
// on all addresses shows as 0.0.0.0 and, when the listener takes IPv6
// too, as ::, as Docker shows it.
func shownBindings(f Forward) []network.PortBinding {
	port := strconv.Itoa(int(f.HostPort))
	if f.HostIP.IsValid() {
		return []network.PortBinding{{HostIP: f.HostIP, HostPort: port}}
	}
	out := []network.PortBinding{{HostIP: netip.IPv4Unspecified(), HostPort: port}}
	if f.DualStack {
		out = append(out, network.PortBinding{HostIP: netip.IPv6Unspecified(), HostPort: port})
	}
	return out
}
