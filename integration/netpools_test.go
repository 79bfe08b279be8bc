//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// daemon.json's bip places the default bridge and default-address-pools
// is where networks without a subnet take theirs, as on Docker (for users
// whose VPN or office network is on 172.17.0.0/16); at the next start the
// bridge follows the file again. A setting hutch does not read is told in
// /info, not refused.
func TestAddressPlan(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "daemon.json")
	write := func(s string) {
		if err := os.WriteFile(conf, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"bip": "10.123.0.1/24", "default-address-pools": [{"base": "10.124.0.0/16", "size": 24}], "features": {"buildkit": true}}`)
	d, ref := pulled(t, "--config-file", conf)
	subnet := func(dd *daemon, n string) string {
		return dockerOK(t, dd, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}}", n)
	}
	if got := subnet(d, "bridge"); got != "10.123.0.0/24 10.123.0.1" {
		t.Errorf("default bridge with bip: %q", got)
	}
	// The container's address and route are the bridge's.
	if out := dockerOK(t, d, "run", "--rm", ref, "sh", "-c", "ip -4 -o addr show eth0; ip route"); !strings.Contains(out, "inet 10.123.0.") || !strings.Contains(out, "default via 10.123.0.1") {
		t.Errorf("a container on the default bridge:\n%s", out)
	}
	dockerOK(t, d, "network", "create", "pooled")
	if got := subnet(d, "pooled"); got != "10.124.0.0/24 10.124.0.1" {
		t.Errorf("a network from default-address-pools: %q", got)
	}
	if w := dockerOK(t, d, "info", "-f", "{{json .Warnings}}"); !strings.Contains(w, "features") || !strings.Contains(w, "no effect") {
		t.Errorf("info warnings do not name the setting hutch ignores: %s", w)
	}

	// Without bip, the bridge moves into the pools at the next start; the
	// user network stays where it was made.
	d.Stop()
	write(`{"default-address-pools": [{"base": "10.125.0.0/16", "size": 24}]}`)
	d2 := startDaemonEnv(t, d.env, d.Socket, "--config-file", conf)
	if got := subnet(d2, "bridge"); got != "10.125.0.0/24 10.125.0.1" {
		t.Errorf("default bridge after bip was dropped: %q", got)
	}
	if got := subnet(d2, "pooled"); got != "10.124.0.0/24 10.124.0.1" {
		t.Errorf("user network after the restart: %q", got)
	}
	if out := dockerOK(t, d2, "run", "--rm", ref, "ip", "-4", "-o", "addr", "show", "eth0"); !strings.Contains(out, "inet 10.125.0.") {
		t.Errorf("a container on the moved bridge:\n%s", out)
	}
	dockerOK(t, d2, "network", "rm", "pooled")

	// A bad bip stops the daemon with the reason, naming the file.
	d2.Stop()
	write(`{"bip": "10.126.0.0/24"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hutchBin(t), "daemon", "--config-file", conf)
	cmd.Env = d2.env
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err == nil || !strings.Contains(out, conf) || !strings.Contains(out, "give the bridge's, e.g. 10.126.0.1/24") {
		t.Errorf("hutch daemon with a bad bip: %v\n%s", err, out)
	}
}
