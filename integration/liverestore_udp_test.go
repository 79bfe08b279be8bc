//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A UDP port published with live restore goes through hutch-keeper, the
// namespace's child that outlives the engine: a DNS server in a container
// (testdata/dnsd) answers queries sent to the host port before the engine
// is killed with -9, while no engine runs, and after the next engine
// adopted the container; removing the container frees the host port.
func TestLiveRestorePublishUDP(t *testing.T) {
	bin := dnsdBinary(t)
	d, ref := pulled(t, "--live-restore")
	addr := freeLoopbackUDP(t)
	dockerOK(t, d, "run", "-d", "--name", "ns", "-p", addr+":53/udp", "-v", bin+":/dnsd:ro",
		ref, "/dnsd", "hello.hutch.test=10.9.8.7")
	waitLogs(t, d, "ns", "ready", 1)
	if out := dockerOK(t, d, "port", "ns", "53/udp"); out != addr {
		t.Errorf("docker port ns 53/udp: %q, want %s", out, addr)
	}
	ask := func(when string) {
		t.Helper()
		var got []net.IP
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if got, err = lookupUDP(addr, "hello.hutch.test."); err == nil {
				break
			}
		}
		if err != nil || len(got) != 1 || !got[0].Equal(net.ParseIP("10.9.8.7")) {
			t.Errorf("hello.hutch.test from %s %s: %v, %v", addr, when, got, err)
		}
	}
	ask("before the kill")

	killDaemons(t, d)
	ask("while no engine runs")

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	ask("after the restart")
	if logs := logsOf(t, d2, "ns"); strings.Count(logs, "query hello.hutch.test type 1 udp") < 3 {
		t.Errorf("the server saw fewer than three queries:\n%s", logs)
	}
	dockerOK(t, d2, "rm", "-f", "ns")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.ListenPacket("udp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still bound after the container's removal: %v", addr, err)
			break
		}
	}
}

// freeLoopbackUDP is a UDP address on 127.0.0.1 that nothing holds.
func freeLoopbackUDP(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// lookupUDP asks the DNS server at addr for the A records of name, over
// UDP only, with the Go resolver.
func lookupUDP(addr, name string) ([]net.IP, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := r.LookupIP(ctx, "ip4", name)
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	return ips, nil
}
