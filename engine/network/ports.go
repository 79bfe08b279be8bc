package network

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine/container"
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

// publishLocked forwards the planned host ports to the container's
// endpoint on its first network that is not internal, and fills ports as
// inspect shows them.
func (m *Manager) publishLocked(ctx context.Context, sb *sandbox, c *container.Container, nets []*netState, plan portPlan, ports network.PortMap) error {
	for _, p := range plan.exposed {
		if _, ok := ports[p]; !ok {
			ports[p] = nil
		}
	}
	var ep *Endpoint
	for _, n := range nets {
		if !n.Internal {
			ep = n.eps[c.ID]
			break
		}
	}
	for _, b := range plan.bindings {
		if ep == nil {
			ports[b.port] = nil // internal networks publish nothing
			continue
		}
		f := Forward{Proto: string(b.port.Proto()), HostIP: b.hostIP, HostPort: b.start, HostPortEnd: b.end, ChildIP: childIP(ep, b.hostIP), ChildPort: b.port.Num()}
		got, err := m.drv.Publish(ctx, f)
		if err != nil {
			hostIP := "0.0.0.0"
			if b.hostIP.IsValid() {
				hostIP = b.hostIP.String()
			}
			return fmt.Errorf("failed to set up container networking: driver failed programming external connectivity on endpoint %s (%s): failed to bind host port for %s:%d:%s:%d/%s: %w",
				ep.Name, ep.ID, hostIP, b.start, f.ChildIP, b.port.Num(), b.port.Proto(), portError(err))
		}
		sb.forwards = append(sb.forwards, got)
		ports[b.port] = append(ports[b.port], shownBindings(got)...)
	}
	return nil
}

// portError keeps a driver's error, but says "address already in use"
// plainly when that is the cause.
func portError(err error) error {
	if strings.Contains(err.Error(), "address already in use") {
		return errors.New("address already in use")
	}
	return err
}

// childIP is the address of ep a host port on hostIP forwards to: its
// IPv6 address for a port on an IPv6 host address, as Docker forwards
// each family to its own, else its IPv4 address; an endpoint with one
// family takes everything there.
func childIP(ep *Endpoint, hostIP netip.Addr) netip.Addr {
	if (hostIP.Is6() && ep.IP6.IsValid()) || !ep.IP.IsValid() {
		return ep.IP6
	}
	return ep.IP
}
