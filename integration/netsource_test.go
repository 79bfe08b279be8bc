//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sourceTestAddr is a non-loopback address of this machine that
// contrib/test/setup-root.sh puts on lo (TEST-NET-2, RFC 5737): a client
// bound to it reaches the host's own published ports from a non-loopback
// source, and the traffic never leaves the machine.
const sourceTestAddr = "198.51.100.1"

// peerCGI is a busybox httpd CGI that answers with the client's address
// and port as the server sees them.
const peerCGI = `#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n%s %s' "$REMOTE_ADDR" "$REMOTE_PORT"
`

// localAddress fails the test unless addr is an address of this machine:
// a connection to it must never leave the host.
func localAddress(t *testing.T, addr string) {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.String() == addr {
			return
		}
	}
	t.Fatalf("%s is not an address of this host (%v): run `bash contrib/test/setup-root.sh` as root, which adds it to lo", addr, addrs)
}

// peerOf GETs the peer CGI at url from a client bound to src ("" for the
// kernel's choice), retrying until the server answers, and returns what the
// server saw and the client's own address.
func peerOf(t *testing.T, src, url string) (seen, local string) {
	t.Helper()
	var laddr net.Addr
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	// No keep-alive: the address of the connection that answered is the
	// last one dialed.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				laddr = conn.LocalAddr()
			}
			return conn, err
		},
	}}
	body := getRetryWith(t, c, url)
	return unmapPeer(strings.TrimSpace(body)), laddr.String()
}

// unmapPeer turns httpd's "[::ffff:198.51.100.1] 4242" into
// "198.51.100.1 4242" (its listener takes both families).
func unmapPeer(s string) string {
	ip, port, _ := strings.Cut(s, " ")
	if a, err := netip.ParseAddr(strings.Trim(ip, "[]")); err == nil {
		ip = a.Unmap().String()
	}
	return ip + " " + port
}

// A server in a container sees the client's own address and port on a
// published TCP port when the client is not on loopback (rootlesskit's
// source-IP-transparent forwarding), on the default bridge and on a user
// network. Loopback clients take the ordinary path: the server sees the
// network's gateway. docker port is unchanged.
func TestNetworkPublishKeepsSourceAddress(t *testing.T) {
	publishKeepsSourceAddress(t)
}

// Likewise with live restore, where hutch-keeper, not rootlesskit's Go
// child, dials the containers from the client's address and sets the
// routing up in the detached namespace.
func TestLiveRestorePublishKeepsSourceAddress(t *testing.T) {
	publishKeepsSourceAddress(t, "--live-restore")
}

func publishKeepsSourceAddress(t *testing.T, args ...string) {
	localAddress(t, sourceTestAddr)
	// Started from a PATH without the sbin directories, as from a Debian
	// user's shell: the daemon adds them, and nft is found.
	ref := busybox(t)
	env, rt, data := daemonEnv(t)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=/usr/local/bin:/usr/bin:/bin"
		}
	}
	d := startDaemonEnv(t, env, filepath.Join(rt, "hutch.sock"), args...)
	d.Runtime, d.Data = rt, data
	dockerOK(t, d, "pull", "-q", ref)
	dockerOK(t, d, "network", "create", "srcnet")
	for _, tc := range []struct{ name, network, gateway string }{
		{"default bridge", "bridge", "172.17.0.1"},
		{"user network", "srcnet", "172.18.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", ":0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			script := `mkdir -p /www/cgi-bin && printf '%s' "$PEER_CGI" > /www/cgi-bin/peer && chmod 755 /www/cgi-bin/peer && exec httpd -f -p 80 -h /www`
			id := dockerOK(t, d, "run", "-d", "--network", tc.network, "-e", "PEER_CGI="+peerCGI, "-p", fmt.Sprintf("%d:80", port), ref, "sh", "-c", script)
			defer dockerOK(t, d, "rm", "-f", id)
			if out := dockerOK(t, d, "port", id, "80"); !strings.Contains(out, fmt.Sprintf("0.0.0.0:%d", port)) {
				t.Errorf("docker port: %q", out)
			}

			seen, local := peerOf(t, sourceTestAddr, fmt.Sprintf("http://%s:%d/cgi-bin/peer", sourceTestAddr, port))
			if want := strings.Replace(local, ":", " ", 1); seen != want {
				t.Errorf("the server saw %q, the client is %q\n--- daemon log ---\n%s", seen, want, d.Log())
			}
			seen, _ = peerOf(t, "", fmt.Sprintf("http://127.0.0.1:%d/cgi-bin/peer", port))
			if ip, _, _ := strings.Cut(seen, " "); ip != tc.gateway {
				t.Errorf("a loopback client seen as %q, want the gateway %s", seen, tc.gateway)
			}
		})
	}
	dockerOK(t, d, "network", "rm", "srcnet")
	// The daemon logs what rootlesskit's child chose once it answered (the
	// connections above needed that answer already).
	const logged = "published TCP ports keep the client's source address"
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(d.Log(), logged); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line %q\n%s", logged, d.Log())
		}
	}
}
