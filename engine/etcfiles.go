package engine

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
	"github.com/hutch-engine/hutch/engine/spec"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// slirp4netns's fixed addresses in the detached network namespace, for a
// daemon without a Networks implementation (containers join it).
const (
	slirpDNS     = "10.0.2.3"
	slirpHost    = "10.0.2.2"
	slirpGuestIP = "10.0.2.100"
)

// writeEtcFiles writes the container's /etc/hostname, /etc/hosts and
// /etc/resolv.conf in its bundle directory; the spec bind-mounts them.
// The network attachment gives the addresses and resolvers; links are
// the lines of --link (legacyLinks).
//
// They are made anew at every start, so they need not outlive a reboot:
// the bundle directory is in the runtime dir (tmpfs), not beside the
// record on the data dir, where each start made three inodes and each
// removal freed them (ext4 pays more for both under load).
func (e *Engine) writeEtcFiles(c *container.Container, att netAttachment, links []string) (spec.EtcFiles, error) {
	dir := e.etcDir(c)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return spec.EtcFiles{}, err
	}
	files := spec.EtcFiles{
		Hostname:   filepath.Join(dir, "hostname"),
		Hosts:      filepath.Join(dir, "hosts"),
		ResolvConf: filepath.Join(dir, "resolv.conf"),
	}
	mode := c.HostConfig.NetworkMode
	hostname := c.Config.Hostname
	if att.hostname != "" {
		hostname = att.hostname
	}
	if mode.IsHost() {
		hostname, _ = os.Hostname()
	}
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	hosts.WriteString("fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")
	resolv := containerResolvConf(hostResolvConf(), e.containerDNS(c.HostConfig), att.DNS)
	switch hostsFile, resolvFile, shared := att.sharedEtc(); {
	case shared:
		// --network container:<id> sees what that container sees.
		if b, err := os.ReadFile(hostsFile); err == nil {
			hosts.Reset()
			hosts.Write(b)
		}
		if b, err := os.ReadFile(resolvFile); err == nil {
			resolv = string(b)
		}
	case mode.IsHost():
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts.Reset()
			hosts.Write(b)
		}
		if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
			resolv = string(b)
		}
	case len(att.Addrs) == 0:
		fmt.Fprintf(&hosts, "127.0.0.1\t%s\n", hostname)
	default:
		// A line for each network's address, as Docker has one for each
		// endpoint: a disconnect deletes its own (nethosts.go).
		for _, a := range att.Addrs {
			fmt.Fprintf(&hosts, "%s\t%s\n", a, hostsNames(hostname, c.Config.Domainname))
		}
		if att.HostGateway != "" {
			// The host's loopback, through slirp4netns.
			fmt.Fprintf(&hosts, "%s\thost.docker.internal\n", att.HostGateway)
		}
	}
	for _, l := range links {
		hosts.WriteString(l + "\n")
	}
	for _, ex := range c.HostConfig.ExtraHosts {
		name, ip, ok := strings.Cut(ex, ":")
		if !ok {
			continue
		}
		if ip == "host-gateway" {
			ip = att.HostGateway
			if ip == "" {
				ip = "127.0.0.1" // host networking: the host is here
			}
		}
		fmt.Fprintf(&hosts, "%s\t%s\n", ip, name)
	}
	for path, data := range map[string]string{
		files.Hostname:   hostname + "\n",
		files.Hosts:      hosts.String(),
		files.ResolvConf: resolv,
	} {
		if err := atomicfile.Write(path, []byte(data), 0o644, false); err != nil {
			return spec.EtcFiles{}, err
		}
	}
	return files, nil
}

// etcDir is where c's /etc files are: its bundle directory (beside the
// record for a record that has none).
func (e *Engine) etcDir(c *container.Container) string {
	if c.Runtime.BundleDir != "" {
		return c.Runtime.BundleDir
	}
	return e.containers.Dir(c.ID)
}

// DNSConfig is a container's own resolver settings: --dns, --dns-search
// and --dns-option.
type DNSConfig struct {
	Servers         []netip.Addr
	Search, Options []string
}

// containerDNS is hc's resolver settings, each that it leaves empty the
// daemon's (daemon.json's dns, dns-search, dns-opts), as Docker's
// buildSandboxOptions.
func (e *Engine) containerDNS(hc *containertypes.HostConfig) DNSConfig {
	own, def := DNSConfig{hc.DNS, hc.DNSSearch, hc.DNSOptions}, e.opts.DNS
	if len(own.Servers) == 0 {
		own.Servers = def.Servers
	}
	if len(own.Search) == 0 {
		own.Search = def.Search
	}
	if len(own.Options) == 0 {
		own.Options = def.Options
	}
	return own
}

// containerResolvConf is the resolv.conf of a container with its own
// network namespace and the resolver settings own (containerDNS), whose
// network gives it d; host is the host's (hostResolvConf).
func containerResolvConf(host string, own DNSConfig, d networking.DNS) string {
	switch {
	case len(own.Servers) > 0 && !d.EmbeddedDNS:
		// --dns replaces the resolver, except on user networks where the
		// embedded server answers the containers' names.
		var servers []string
		for _, a := range own.Servers {
			servers = append(servers, a.String())
		}
		return resolvConf(servers, own.Search, own.Options)
	case len(d.Nameservers) > 0:
		return resolvConf(d.Nameservers, own.Search, slices.Concat(d.DNSOptions, own.Options))
	}
	return host
}

// resolvConf is a resolv.conf with these servers, search domains and
// options.
func resolvConf(servers, search, options []string) string {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(search) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(search, " "))
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.String()
}

// hostResolvConf is the host's resolver config without loopback servers,
// which a container's own network namespace cannot reach.
func hostResolvConf() string {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	var out strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" && (strings.HasPrefix(f[1], "127.") || f[1] == "::1") {
			continue
		}
		out.WriteString(line + "\n")
	}
	return strings.TrimRight(out.String(), "\n") + "\n"
}
