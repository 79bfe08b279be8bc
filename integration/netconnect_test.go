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

// /etc/hosts has a line for each of a container's network addresses, as
// Docker writes it (TestEtcHostsDisconnect in moby's integration tests):
// docker network connect of a running container appends the line of its
// address on the new network, a disconnect deletes that network's line
// wherever it is, and no other; the containers that share its namespace
// follow. The line names the hostname, and its first label when it has
// dots. A container connected before its start has both lines from the
// start; a user-mounted /etc/hosts is left alone; one the user edited
// gets the line all the same (as Docker's).
func TestNetworkConnectHosts(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "h1")
	dockerOK(t, d, "network", "create", "h2")
	dockerOK(t, d, "run", "-d", "--name", "c1", "--hostname", "c1.invalid", "--network", "h1", "--add-host", "otherhost.invalid:192.0.2.3", ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--name", "side", "--network", "container:c1", ref, "sleep", "300")
	hosts := func(c string) string {
		out, _ := d.Docker(t, "exec", c, "cat", "/etc/hosts")
		return out
	}
	ip := func(c, net string) string {
		return dockerOK(t, d, "inspect", "-f", "{{with index .NetworkSettings.Networks \""+net+"\"}}{{.IPAddress}}{{end}}", c)
	}
	line := func(c, net string) string { return ip(c, net) + "\tc1.invalid c1\n" }
	start := hosts("c1")
	own := line("c1", "h1")
	if !strings.Contains(start, own) || !strings.Contains(start, "192.0.2.3\totherhost.invalid\n") {
		t.Fatalf("/etc/hosts at the start:\n%s", start)
	}
	base := strings.Replace(start, own, "", 1) // what is not c1's own
	check := func(step, want string) {
		t.Helper()
		for _, c := range []string{"c1", "side"} {
			if got := hosts(c); got != want {
				t.Errorf("%s's /etc/hosts after %s:\n%s\nwant:\n%s", c, step, got, want)
			}
		}
	}
	check("the start", start)
	dockerOK(t, d, "network", "connect", "h2", "c1")
	h2Line := line("c1", "h2")
	check("connecting h2", start+h2Line)
	dockerOK(t, d, "network", "disconnect", "h1", "c1")
	check("disconnecting h1", base+h2Line)
	dockerOK(t, d, "network", "connect", "h1", "c1")
	h1Line := line("c1", "h1")
	check("connecting h1 again", base+h2Line+h1Line)
	dockerOK(t, d, "network", "disconnect", "h1", "c1")
	check("disconnecting h1 again", base+h2Line)
	dockerOK(t, d, "network", "disconnect", "h2", "c1")
	check("disconnecting h2", base)

	// Connected before its start: a line for each network at the start.
	dockerOK(t, d, "create", "--name", "two", "--network", "h1", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "h2", "two")
	dockerOK(t, d, "start", "two")
	short := dockerOK(t, d, "inspect", "-f", "{{.Config.Hostname}}", "two")
	got := hosts("two")
	for _, net := range []string{"h1", "h2"} {
		if want := ip("two", net) + "\t" + short + "\n"; !strings.Contains(got, want) {
			t.Errorf("/etc/hosts of a container started on h1 and h2 has no line %q:\n%s", want, got)
		}
	}

	// Edited by the user: the line is appended all the same.
	dockerOK(t, d, "run", "-d", "--name", "edited", "--network", "h1", ref, "sleep", "300")
	dockerOK(t, d, "exec", "edited", "sh", "-c", "printf '10.1.1.1\\tmine\\n' >> /etc/hosts")
	edited := hosts("edited")
	dockerOK(t, d, "network", "connect", "h2", "edited")
	short = dockerOK(t, d, "inspect", "-f", "{{.Config.Hostname}}", "edited")
	if got, want := hosts("edited"), edited+ip("edited", "h2")+"\t"+short+"\n"; got != want {
		t.Errorf("an edited /etc/hosts after the connect:\n%s\nwant:\n%s", got, want)
	}
	// Bind-mounted by the user: neither the file nor the mount changes.
	mine := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(mine, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "run", "-d", "--name", "mounted", "--network", "h1", "-v", mine+":/etc/hosts:ro", ref, "sleep", "300")
	dockerOK(t, d, "network", "connect", "h2", "mounted")
	dockerOK(t, d, "network", "disconnect", "h1", "mounted")
	if got := hosts("mounted"); got != "127.0.0.1\tlocalhost\n" {
		t.Errorf("a bind-mounted /etc/hosts shows %q after connect and disconnect", got)
	}
	if b, _ := os.ReadFile(mine); string(b) != "127.0.0.1\tlocalhost\n" {
		t.Errorf("the user's hosts file became %q", b)
	}

	dockerOK(t, d, "rm", "-f", "c1", "side", "two", "edited", "mounted")
	dockerOK(t, d, "network", "rm", "h1", "h2")
}
