package engine

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
)

// A running container connected to a user network gets that network's
// embedded DNS server as its nameserver, as dockerd starts the resolver of
// a sandbox that joins its first endpoint needing one and rewrites the
// container's resolv.conf then (libnetwork's startResolver/rebuildDNS): the
// names and aliases of the network resolve from it at once. Disconnected
// from the network whose server it asks, it asks another user network's,
// or the default bridge's resolver: the old server would answer it no
// longer by its address there. (Docker keeps its per-container resolver
// at 127.0.0.11, which then forwards only; hutch's servers are per
// network, on their gateways.)
//
// Only the file hutch wrote is rewritten, in place (it is bind-mounted,
// so a new file renamed over it would not be seen), and only while it is
// as the start left it: Docker too leaves a resolv.conf the user changed,
// and one a user mount replaced. Containers started on a user network
// (or created, connected, then started) get the server at their start:
// nothing of this runs on the start path.

// netChange is what a connect or disconnect did that a running
// container's /etc/hosts shows: the addresses it got on the network
// (IPv4, then IPv6), or the ones it lost there.
type netChange struct {
	added, removed []netip.Addr
}

// endpointAddrs are the addresses of an endpoint's settings, IPv4 first,
// as /etc/hosts lists them.
func endpointAddrs(ep *network.EndpointSettings) []netip.Addr {
	var out []netip.Addr
	if ep == nil {
		return nil
	}
	for _, a := range []netip.Addr{ep.IPAddress, ep.GlobalIPv6Address} {
		if a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}

// reEtc runs change (a connect or disconnect of c) and, when c runs,
// updates the /etc files of c and of the containers that joined its
// namespace: resolv.conf when the change moved their nameserver, and
// /etc/hosts by the address gained or lost (nethosts.go).
func (e *Engine) reEtc(ctx context.Context, c *container.Container, change func() (netChange, error)) error {
	n := e.opts.Networks
	e.dnsMu.Lock()
	defer e.dnsMu.Unlock()
	before, running := n.DNS(ctx, c.ID)
	ch, err := change()
	if err != nil {
		return err
	}
	after, ok := n.DNS(ctx, c.ID)
	if !running || !ok {
		return nil
	}
	// Containers on --network container:<c> see what c sees: their
	// /etc files were copies of c's at their start.
	targets := []*container.Container{c}
	for _, id := range e.joins.joiners(c.ID) {
		if t, err := e.containers.Get(ctx, id); err == nil {
			targets = append(targets, t)
		}
	}
	if !sameDNS(before, after) {
		e.reResolvConf(c, targets, before, after)
	}
	e.reHosts(c, targets, ch)
	return nil
}

// reResolvConf rewrites the resolv.conf of targets from what DNS before
// made of c's to what after makes.
func (e *Engine) reResolvConf(c *container.Container, targets []*container.Container, before, after networking.DNS) {
	host := hostResolvConf()
	own := e.containerDNS(c.HostConfig)
	old, cur := containerResolvConf(host, own, before), containerResolvConf(host, own, after)
	for _, t := range targets {
		if userMounted(t, "/etc/resolv.conf") {
			continue
		}
		switch done, err := rewriteIfSame(filepath.Join(e.etcDir(t), "resolv.conf"), old, cur); {
		case err != nil:
			e.log.Warn("rewriting resolv.conf after a network change", "container", t.ID, "err", err)
		case !done:
			e.log.Info("resolv.conf changed since the container started: left as it is", "container", t.ID)
		}
	}
}

func sameDNS(a, b networking.DNS) bool {
	return a.EmbeddedDNS == b.EmbeddedDNS && slices.Equal(a.Nameservers, b.Nameservers) && slices.Equal(a.DNSOptions, b.DNSOptions)
}

// rewriteIfSame writes cur into the file at path in place when it holds
// old, and reports whether it did. A file that is gone is left so.
func rewriteIfSame(path, old, cur string) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil || string(b) != old {
		return false, err
	}
	// Truncated and written, not renamed over: the container's
	// /etc/resolv.conf is a bind mount of this inode.
	return true, os.WriteFile(path, []byte(cur), 0o644)
}

// userMounted reports whether a mount of the user's (a bind, a volume,
// a tmpfs) is at dst in c, where it wins over the engine's file.
func userMounted(c *container.Container, dst string) bool {
	for _, m := range c.Mounts {
		if path.Clean(m.Destination) == dst {
			return true
		}
	}
	if c.HostConfig != nil {
		for d := range c.HostConfig.Tmpfs {
			if path.Clean(d) == dst {
				return true
			}
		}
	}
	if c.Config != nil {
		for d := range c.Config.Volumes {
			if path.Clean(d) == dst {
				return true
			}
		}
	}
	return false
}
