package daemon

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/rootless/preflight"
)

func TestChooseNetwork(t *testing.T) {
	noTun := []preflight.Item{
		{Check: preflight.CheckTun, Name: "/dev/net/tun", Status: preflight.Missing, Detail: "open /dev/net/tun: no such file or directory", Fix: "run as root: modprobe tun"},
		{Check: preflight.CheckSlirp, Name: "slirp4netns", Detail: "/usr/bin/slirp4netns"},
	}
	ok := []preflight.Item{{Check: preflight.CheckTun, Name: "/dev/net/tun"}, {Check: preflight.CheckSlirp, Name: "slirp4netns"}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name            string
		network, chosen bool
		items           []preflight.Item
		wantNetwork     bool
		wantWarning     string // "" for none
		wantErr         string
	}{
		{"auto, slirp4netns can run", true, false, ok, true, "", ""},
		{"auto, no tun: falls back", true, false, noTun, false, "slirp4netns cannot run here", ""},
		{"chosen slirp4netns, no tun: stops", true, true, noTun, true, "", "--network=slirp4netns: /dev/net/tun: open /dev/net/tun: no such file or directory; fix: run as root: modprobe tun"},
		{"chosen none", false, true, ok, false, "--network=none", ""},
		{"chosen none, no tun", false, true, noTun, false, "--network=none", ""},
	} {
		c := &config.Config{Network: tc.network, NetworkChosen: tc.chosen}
		err := chooseNetwork(c, tc.items, log)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.Network != tc.wantNetwork {
			t.Errorf("%s: network %v, want %v", tc.name, c.Network, tc.wantNetwork)
		}
		switch {
		case tc.wantWarning == "" && len(c.Warnings) > 0:
			t.Errorf("%s: warnings %q, want none", tc.name, c.Warnings)
		case tc.wantWarning != "" && (len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.wantWarning) || !strings.Contains(c.Warnings[0], "--network host")):
			t.Errorf("%s: warnings %q, want one with %q and what still works", tc.name, c.Warnings, tc.wantWarning)
		}
	}
}
