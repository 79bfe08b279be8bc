package daemon

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/engine"
	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/hutch-engine/hutch/rootless/preflight"
)

// chooseNetwork settles whether slirp4netns serves the containers'
// network. Where it cannot run (not installed, /dev/net/tun missing or
// closed: unprivileged pods, minimal CI images) the daemon starts without
// it, as it does without newuidmap in single-UID mode, and says so in its
// log and /info, unless --network=slirp4netns asked for it: then it stops
// with the reason and the fix instead of slirp4netns's own error.
func chooseNetwork(c *config.Config, items []preflight.Item, log *slog.Logger) error {
	why := preflight.NoNetwork(items)
	switch {
	case !c.Network:
		w := "networking disabled (--network=none): " + preflight.NoNetworkLimits
		log.Warn("WARNING: " + w)
		c.Warnings = append(c.Warnings, w)
	case why == "":
	case c.NetworkChosen:
		return fmt.Errorf("--network=slirp4netns: %s", why)
	default:
		c.Network = false
		w := "networking disabled: slirp4netns cannot run here, so " + preflight.NoNetworkLimits
		log.Warn("WARNING: " + w + ". Run `hutch check` for the fix.")
		c.Warnings = append(c.Warnings, w)
	}
	return nil
}

// addressPlan gives the network manager daemon.json's bip and
// default-address-pools (config checked them when it read the file).
func addressPlan(c *config.Config, o *enet.Options) error {
	if c.BIP != "" {
		p, err := netip.ParsePrefix(c.BIP)
		if err != nil {
			return fmt.Errorf("bip: %w", err)
		}
		o.BIP = p
	}
	for _, ap := range c.AddressPools {
		p, err := netip.ParsePrefix(ap.Base)
		if err != nil {
			return fmt.Errorf("default-address-pools: %w", err)
		}
		o.Pools = append(o.Pools, enet.Pool{Base: p, Size: ap.Size})
	}
	return nil
}

// dnsDefaults is daemon.json's dns, dns-search and dns-opts (config
// checked the addresses when it read the file).
func dnsDefaults(c *config.Config) (engine.DNSConfig, error) {
	d := engine.DNSConfig{Search: c.DNSSearch, Options: c.DNSOpts}
	for _, s := range c.DNS {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return d, fmt.Errorf("dns: %w", err)
		}
		d.Servers = append(d.Servers, a)
	}
	return d, nil
}
