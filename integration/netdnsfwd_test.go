//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A container's --dns servers answer, through the embedded DNS server of
// its user network, the names that are no container's, as Docker's
// resolver forwards them to a container's external servers: its
// resolv.conf still names the embedded server; the servers are asked in
// order, past one where nothing listens; from the container's own
// namespace (the server sees the container's address, and a loopback
// server is the container's own); on a network connected while it runs;
// and after a daemon restart. No query leaves the machine: the servers
// are containers (testdata/dnsd), and no name is looked up elsewhere.
func TestNetworkDNSForward(t *testing.T) {
	bin := dnsdBinary(t)
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--subnet", "10.213.0.0/24", "fwd")
	const gw, server, nobody = "10.213.0.1", "10.213.0.53", "10.213.0.54"
	mount := bin + ":/dnsd:ro"
	dockerOK(t, d, "run", "-d", "--stop-timeout", "1", "--name", "ns1", "--network", "fwd", "--ip", server, "-v", mount, ref, "/dnsd", "hello.hutch.test=10.9.8.7")
	dockerOK(t, d, "run", "-d", "--stop-timeout", "1", "--name", "quiet", "--network", "fwd", "--ip", nobody, ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--stop-timeout", "1", "--name", "client", "--network", "fwd", "--dns", nobody, "--dns", server, ref, "sleep", "300")
	waitLogs(t, d, "ns1", "ready", 1)

	embedded := "nameserver " + gw + "\noptions ndots:0\n"
	resolv := func(c string) string {
		out, _ := d.Docker(t, "exec", c, "cat", "/etc/resolv.conf")
		return out
	}
	// lookup resolves name from container c with busybox's nslookup,
	// which asks the server of c's resolv.conf, a few times while the
	// server may still be starting.
	lookup := func(dd *daemon, c, name, want string) {
		t.Helper()
		var out string
		for range 20 {
			out, _ = dd.Docker(t, "exec", c, "nslookup", name)
			if strings.Contains(out, "Address: "+want) {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Errorf("%s from %s does not resolve to %s:\n%s\n--- ns1 ---\n%s", name, c, want, out, logsOf(t, dd, "ns1"))
	}

	if got := resolv("client"); got != embedded {
		t.Errorf("resolv.conf of a container with --dns on a user network: %q, want %q (the embedded server)", got, embedded)
	}
	lookup(d, "client", "hello.hutch.test", "10.9.8.7")
	// Asked from the client's namespace: from its address on fwd.
	clientIP := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.fwd.IPAddress}}", "client")
	if logs := logsOf(t, d, "ns1"); !strings.Contains(logs, "query hello.hutch.test type 1 udp from "+clientIP+":") {
		t.Errorf("the server was not asked from the client's address %s:\n%s", clientIP, logs)
	}
	// The names of containers stay the embedded server's.
	lookup(d, "client", "quiet", nobody)

	// --dns 127.0.0.1 is the container's own loopback.
	out, err := d.Docker(t, "run", "--rm", "--network", "fwd", "--dns", "127.0.0.1", "-v", mount, ref, "sh", "-c",
		"/dnsd own.hutch.test=10.9.8.8 >/tmp/log & for i in $(seq 50); do grep -q ready /tmp/log && break; sleep 0.1; done; cat /etc/resolv.conf; nslookup own.hutch.test")
	if err != nil || !strings.Contains(out, embedded) || !strings.Contains(out, "Address: 10.9.8.8") {
		t.Errorf("a server on the container's loopback: %v\n%s", err, out)
	}

	// On the default bridge --dns is the nameserver itself; connected to
	// fwd, the embedded server is, and it asks the same servers.
	dockerOK(t, d, "run", "-d", "--stop-timeout", "1", "--name", "late", "--dns", server, ref, "sleep", "300")
	if got := resolv("late"); got != "nameserver "+server+"\n" {
		t.Errorf("resolv.conf with --dns on the default bridge: %q", got)
	}
	dockerOK(t, d, "network", "connect", "fwd", "late")
	if got := resolv("late"); got != embedded {
		t.Errorf("resolv.conf after the connect: %q, want %q", got, embedded)
	}
	lookup(d, "late", "hello.hutch.test", "10.9.8.7")

	// A new daemon: the containers, stopped with the old one's network
	// (after their stop timeout: sleep as pid 1 ignores SIGTERM), start
	// again with their servers.
	killDaemons(t, d)
	d2 := startDaemonEnv(t, d.env, d.Socket)
	dockerOK(t, d2, "start", "ns1", "quiet", "client", "late")
	waitLogs(t, d2, "ns1", "ready", 2)
	lookup(d2, "client", "hello.hutch.test", "10.9.8.7")
	lookup(d2, "late", "hello.hutch.test", "10.9.8.7")

	dockerOK(t, d2, "rm", "-f", "ns1", "quiet", "client", "late")
	dockerOK(t, d2, "network", "rm", "fwd")
}

// logsOf is container c's output.
func logsOf(t *testing.T, d *daemon, c string) string {
	out, _ := d.Docker(t, "logs", c)
	return out
}

// waitLogs waits until container c's output has line n times.
func waitLogs(t *testing.T, d *daemon, c, line string, n int) {
	t.Helper()
	for range 100 {
		if strings.Count(logsOf(t, d, c), line+"\n") >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not log %q %d times:\n%s", c, line, n, logsOf(t, d, c))
}

// daemon.json's dns, dns-search and dns-opts are what containers that
// give none of their own get, each apart, as Docker's: the default
// bridge's resolv.conf names the servers, and the embedded DNS server of
// a user network forwards to them. The network is internal, so that a
// query the server did not forward there would fail rather than leave
// the machine.
func TestDaemonDNSDefaults(t *testing.T) {
	bin := dnsdBinary(t)
	conf := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(conf, []byte(`{"dns": ["10.214.0.53"], "dns-search": ["corp.test"], "dns-opts": ["ndots:2"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, ref := pulled(t, "--config-file", conf)
	cat := func(args ...string) string {
		return dockerOK(t, d, append(append([]string{"run", "--rm"}, args...), ref, "cat", "/etc/resolv.conf")...)
	}
	if got := cat(); got != "nameserver 10.214.0.53\nsearch corp.test\noptions ndots:2" {
		t.Errorf("default bridge with the daemon's dns: %q", got)
	}
	if got := cat("--dns-search", "own.test"); got != "nameserver 10.214.0.53\nsearch own.test\noptions ndots:2" {
		t.Errorf("--dns-search beside the daemon's dns: %q", got)
	}
	if got := cat("--dns", "10.214.0.54"); got != "nameserver 10.214.0.54\nsearch corp.test\noptions ndots:2" {
		t.Errorf("--dns beside the daemon's dns-search: %q", got)
	}

	dockerOK(t, d, "network", "create", "--internal", "--subnet", "10.214.0.0/24", "ifwd")
	dockerOK(t, d, "run", "-d", "--stop-timeout", "1", "--name", "ns1", "--network", "ifwd", "--ip", "10.214.0.53", "-v", bin+":/dnsd:ro", ref, "/dnsd", "hello.hutch.test=10.9.8.7")
	waitLogs(t, d, "ns1", "ready", 1)
	var out string
	for range 20 {
		out, _ = d.Docker(t, "run", "--rm", "--network", "ifwd", ref, "nslookup", "hello.hutch.test.")
		if strings.Contains(out, "Address: 10.9.8.7") {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !strings.Contains(out, "Address: 10.9.8.7") {
		t.Errorf("a container without --dns on a user network does not reach the daemon's dns:\n%s\n--- ns1 ---\n%s", out, logsOf(t, d, "ns1"))
	}
	dockerOK(t, d, "rm", "-f", "ns1")
	dockerOK(t, d, "network", "rm", "ifwd")
}
