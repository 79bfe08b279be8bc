package swarm

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestListenAddrs(t *testing.T) {
	for _, tc := range []struct{ listen, advertise, wantL, wantA string }{
		{"", "", "0.0.0.0:2377", "127.0.0.1:2377"},
		{"0.0.0.0:4000", "", "0.0.0.0:4000", "127.0.0.1:4000"},
		{"127.0.0.1:4000", "", "127.0.0.1:4000", "127.0.0.1:4000"},
		{"10.0.0.5", "", "10.0.0.5:2377", "10.0.0.5:2377"},
		{"0.0.0.0:4000", "192.168.1.2", "0.0.0.0:4000", "192.168.1.2:4000"},
		{"[::1]:4000", "", "[::1]:4000", "[::1]:4000"},
	} {
		l, a, err := listenAddrs(tc.listen, tc.advertise)
		if err != nil || l != tc.wantL || a != tc.wantA {
			t.Errorf("listenAddrs(%q, %q) = %q, %q, %v; want %q, %q", tc.listen, tc.advertise, l, a, err, tc.wantL, tc.wantA)
		}
	}
	for _, tc := range []struct{ listen, advertise string }{
		{"eth0", ""}, {"not an address", ""}, {"127.0.0.1:99999", ""}, {"0.0.0.0:4000", "eth0"}, {"host.example:2377", ""},
	} {
		if _, _, err := listenAddrs(tc.listen, tc.advertise); !errdefs.IsInvalidArgument(err) {
			t.Errorf("listenAddrs(%q, %q): %v, want an InvalidArgument error", tc.listen, tc.advertise, err)
		}
	}
}

// FuzzListenAddrs: a join or init request's addresses are resolved or
// refused as a bad request.
func FuzzListenAddrs(f *testing.F) {
	f.Add("0.0.0.0:2377", "")
	f.Add("[::1]:1", "10.0.0.1")
	f.Fuzz(func(t *testing.T, listen, advertise string) {
		if _, _, err := listenAddrs(listen, advertise); err != nil && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("error of no class: %v", err)
		}
	})
}

func TestParseSince(t *testing.T) {
	ts, err := parseSince("1700000000.5")
	if err != nil || ts.Seconds != 1700000000 || ts.Nanos != 5 {
		t.Errorf("parseSince = %v, %v", ts, err)
	}
	if _, err := parseSince("yesterday"); !errdefs.IsInvalidArgument(err) {
		t.Errorf("parseSince(yesterday): %v", err)
	}
}
