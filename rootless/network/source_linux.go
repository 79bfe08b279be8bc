package network

import (
	"context"
	"os"
	"os/exec"
	"time"
)

// Published TCP ports keep the client's source address through
// rootlesskit's source-IP-transparent option of its builtin port driver:
// its child dials the container from the client's own address
// (IP_TRANSPARENT) and, on the first such connection, adds a policy route
// (fwmark 100 → table 100, "local default dev lo") and marking rules in an
// nftables table of its own ("inet rootlesskit_transparent") in the
// detached namespace, so that the container's answers come back to that
// socket instead of going out through slirp4netns. Loopback clients, UDP,
// and hosts without a usable nft (or iptables) take the ordinary path: the
// server then sees its network's gateway. hutch's own table ("ip hutch")
// never matches that traffic: it is neither forwarded nor masqueraded.
//
// rootlesskit decides in its child, with the child's PATH; the engine only
// reads the outcome from the API and says it once in the log.

// sourceIPExtra is the builtin port driver's key for the backend it set
// up ("nft", "iptables"; "none" until its child answered).
const sourceIPExtra = "sourceIPTransparentBackend"

// sourceIPWait bounds the wait for the child's probe (rootlesskit bounds
// each probe command to 3 s). A variable for the tests.
var sourceIPWait = 10 * time.Second

// reportSourceAddress logs whether published ports keep the client's
// source address, once rootlesskit's child has told (or after
// sourceIPWait, when it never will).
func (d *Driver) reportSourceAddress(ctx context.Context) {
	deadline := time.Now().Add(sourceIPWait)
	for {
		info, err := d.ports.Info(ctx)
		if err == nil && info.PortDriver != nil {
			if b := info.PortDriver.Extra[sourceIPExtra]; b != "" && b != "none" {
				d.log.Info("published TCP ports keep the client's source address (loopback clients excepted)", "firewall", b)
				return
			}
		}
		if time.Now().After(deadline) {
			reason := sourceIPMissing()
			if err != nil {
				reason = "rootlesskit's API: " + err.Error()
			}
			d.log.Warn("published ports do not keep the client's source address: containers see their network's gateway", "reason", reason)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-d.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sourceIPMissing guesses why rootlesskit's child found no firewall tool:
// it looks them up in the PATH the engine shares with it.
func sourceIPMissing() string {
	if _, err := exec.LookPath("nft"); err == nil {
		return "nft did not work in the detached namespace (debug log, component=port)"
	}
	if _, err := exec.LookPath("iptables"); err == nil {
		return "iptables did not work in the detached namespace (debug log, component=port)"
	}
	for _, p := range []string{"/usr/sbin/nft", "/sbin/nft"} {
		if _, err := os.Stat(p); err == nil {
			return p + " is not in the daemon's PATH"
		}
	}
	return "nft is not installed (apt-get install nftables)"
}
