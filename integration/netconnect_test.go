//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docker network connect of a running container to a user network points
// its resolv.conf at that network's embedded DNS server, as dockerd
// starts a sandbox's resolver when it joins its first endpoint needing
// one: the names and aliases of the network resolve from it at once, and
// from the containers that share its namespace. The search domains and
// options stay. A disconnect takes it back to the default bridge's
// resolver; a resolv.conf the user changed or mounted is left alone.
func TestNetworkConnectDNS(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "dnsnet")
	dockerOK(t, d, "run", "-d", "--name", "target", "--network", "dnsnet", "--network-alias", "bee", ref, "sleep", "300")
	beeIP := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.dnsnet.IPAddress}}", "target")
	gw := dockerOK(t, d, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", "dnsnet")
	bridgeNS := "nameserver 10.0.2.3\n"
	// ping resolves as the C library does (busybox's nslookup tries the
	// search domains first); the name is what is checked.
	resolves := func(name string) (string, bool) {
		out, _ := d.Docker(t, "exec", name, "ping", "-c1", "-W3", "bee")
		return out, strings.Contains(out, "PING bee ("+beeIP+")")
	}
	resolv := func(name string) string {
		out, _ := d.Docker(t, "exec", name, "cat", "/etc/resolv.conf")
		return out
	}

	// On the default bridge, then connected while it runs; a container
	// that joined its namespace follows.
	dockerOK(t, d, "run", "-d", "--name", "plain", ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--name", "joiner", "--network", "container:plain", ref, "sleep", "300")
	if out, ok := resolves("plain"); ok {
		t.Fatalf("bee resolves from the default bridge before the connect:\n%s", out)
	}
	dockerOK(t, d, "network", "connect", "dnsnet", "plain")
	want := "nameserver " + gw + "\noptions ndots:0\n"
	for _, c := range []string{"plain", "joiner"} {
		if got := resolv(c); got != want {
			t.Errorf("%s's resolv.conf after the connect: %q, want %q", c, got, want)
		}
		if out, ok := resolves(c); !ok {
			t.Errorf("bee does not resolve from %s after the connect:\n%s", c, out)
		}
	}
	if out, err := d.Docker(t, "exec", "plain", "nslookup", "bee"); err != nil || !strings.Contains(out, "Address: "+beeIP) {
		t.Errorf("nslookup bee from plain: %v\n%s", err, out)
	}
	// Disconnected, it asks the default bridge's resolver again: the
	// names of dnsnet are no longer its.
	dockerOK(t, d, "network", "disconnect", "dnsnet", "plain")
	for _, c := range []string{"plain", "joiner"} {
		if got := resolv(c); got != bridgeNS {
			t.Errorf("%s's resolv.conf after the disconnect: %q, want %q", c, got, bridgeNS)
		}
		if out, ok := resolves(c); ok {
			t.Errorf("bee still resolves from %s after the disconnect:\n%s", c, out)
		}
	}

	// --network bridge with search domains and options: they stay.
	dockerOK(t, d, "run", "-d", "--name", "searcher", "--network", "bridge", "--dns-search", "example.org", "--dns-option", "timeout:2", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "--alias", "searcher-alias", "dnsnet", "searcher")
	if got, want := resolv("searcher"), "nameserver "+gw+"\nsearch example.org\noptions ndots:0 timeout:2\n"; got != want {
		t.Errorf("resolv.conf with search and options after the connect: %q, want %q", got, want)
	}
	if out, ok := resolves("searcher"); !ok {
		t.Errorf("bee does not resolve from searcher:\n%s", out)
	}
	// Its alias on dnsnet resolves for the others there.
	if out, err := d.Docker(t, "exec", "target", "ping", "-c1", "-W3", "searcher-alias"); err != nil {
		t.Errorf("searcher-alias from target: %v\n%s", err, out)
	}

	// Created, connected, then started: the start gives it the server.
	dockerOK(t, d, "create", "--name", "later", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "dnsnet", "later")
	dockerOK(t, d, "start", "later")
	if got := resolv("later"); got != want {
		t.Errorf("resolv.conf of a container connected before its start: %q, want %q", got, want)
	}
	if out, ok := resolves("later"); !ok {
		t.Errorf("bee does not resolve from a container connected before its start:\n%s", out)
	}

	// Changed by the user: left as it is, as Docker leaves it.
	dockerOK(t, d, "run", "-d", "--name", "edited", ref, "sleep", "300")
	dockerOK(t, d, "exec", "edited", "sh", "-c", "echo nameserver 192.0.2.53 > /etc/resolv.conf")
	dockerOK(t, d, "network", "connect", "dnsnet", "edited")
	if got := resolv("edited"); got != "nameserver 192.0.2.53\n" {
		t.Errorf("a resolv.conf the user changed became %q after the connect", got)
	}
	// Bind-mounted by the user: neither the file nor the mount changes.
	mine := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(mine, []byte("nameserver 192.0.2.54\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "run", "-d", "--name", "mounted", "-v", mine+":/etc/resolv.conf:ro", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "dnsnet", "mounted")
	if got := resolv("mounted"); got != "nameserver 192.0.2.54\n" {
		t.Errorf("a bind-mounted resolv.conf shows %q after the connect", got)
	}
	if b, _ := os.ReadFile(mine); string(b) != "nameserver 192.0.2.54\n" {
		t.Errorf("the user's resolv.conf became %q", b)
	}

	dockerOK(t, d, "rm", "-f", "target", "plain", "joiner", "searcher", "later", "edited", "mounted")
	dockerOK(t, d, "network", "rm", "dnsnet")
}
