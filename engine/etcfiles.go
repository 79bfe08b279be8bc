package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/spec"
)

// slirp4netns's fixed addresses in the detached network namespace.
const (
	slirpDNS     = "10.0.2.3"
	slirpHost    = "10.0.2.2"
	slirpGuestIP = "10.0.2.100"
)

// writeEtcFiles writes the container's /etc/hostname, /etc/hosts and
// /etc/resolv.conf beside its record; the spec bind-mounts them.
func (e *Engine) writeEtcFiles(c *container.Container) (spec.EtcFiles, error) {
	dir := e.containers.Dir(c.ID)
	files := spec.EtcFiles{
		Hostname:   filepath.Join(dir, "hostname"),
		Hosts:      filepath.Join(dir, "hosts"),
		ResolvConf: filepath.Join(dir, "resolv.conf"),
	}
	mode := string(c.HostConfig.NetworkMode)
	hostname := c.Config.Hostname
	if mode == "host" {
		hostname, _ = os.Hostname()
	}
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	hosts.WriteString("fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n")
	resolv := hostResolvConf()
	switch {
	case mode == "host":
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts.Reset()
			hosts.Write(b)
		}
		if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
			resolv = string(b)
		}
	case mode == "none" || e.opts.NetNS == "":
		fmt.Fprintf(&hosts, "127.0.0.1\t%s\n", hostname)
	default:
		// The detached namespace: slirp4netns is the gateway, its DNS
		// forwards to the host's resolver, and 10.0.2.2 is the host.
		fmt.Fprintf(&hosts, "%s\t%s\n%s\thost.docker.internal\n", slirpGuestIP, hostname, slirpHost)
		resolv = "nameserver " + slirpDNS + "\n"
	}
	for _, ex := range c.HostConfig.ExtraHosts {
		name, ip, ok := strings.Cut(ex, ":")
		if !ok {
			continue
		}
		if ip == "host-gateway" {
			ip = slirpHost
		}
		fmt.Fprintf(&hosts, "%s\t%s\n", ip, name)
	}
	for path, data := range map[string]string{
		files.Hostname:   hostname + "\n",
		files.Hosts:      hosts.String(),
		files.ResolvConf: resolv,
	} {
		if err := writeFileAtomic(path, []byte(data), 0o644, false); err != nil {
			return spec.EtcFiles{}, err
		}
	}
	return files, nil
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
