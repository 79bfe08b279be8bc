package engine

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
)

// A connect rewrites the file the container's bind mount holds (the same
// inode), and only while it is as the start wrote it.
func TestRewriteIfSame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	const old, cur = "nameserver 10.0.2.3\n", "nameserver 172.18.0.1\noptions ndots:0\n"
	inode := func() uint64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	if done, err := rewriteIfSame(path, old, cur); done || err != nil {
		t.Errorf("a missing file: %v %v", done, err)
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	ino := inode()
	if done, err := rewriteIfSame(path, old, cur); !done || err != nil {
		t.Fatalf("rewrite: %v %v", done, err)
	}
	if b, _ := os.ReadFile(path); string(b) != cur || inode() != ino {
		t.Errorf("after the rewrite: %q, inode %d (was %d)", b, inode(), ino)
	}
	// Changed meanwhile (by the user, in the container): left.
	if done, err := rewriteIfSame(path, old, "nameserver 10.0.2.3\n"); done || err != nil {
		t.Errorf("a changed file rewritten: %v %v", done, err)
	}
	if b, _ := os.ReadFile(path); string(b) != cur {
		t.Errorf("a changed file became %q", b)
	}
}

func TestContainerResolvConf(t *testing.T) {
	const host = "nameserver 192.0.2.1\nsearch corp\n"
	bridge := networking.DNS{Nameservers: []string{"10.0.2.3"}}
	embedded := networking.DNS{Nameservers: []string{"172.18.0.1"}, DNSOptions: []string{"ndots:0"}, EmbeddedDNS: true}
	withDNS := &containertypes.HostConfig{DNS: []netip.Addr{netip.MustParseAddr("9.9.9.9")}, DNSSearch: []string{"example.org"}, DNSOptions: []string{"timeout:2"}}
	for _, tc := range []struct {
		name string
		hc   *containertypes.HostConfig
		d    networking.DNS
		want string
	}{
		{"no network resolver", &containertypes.HostConfig{}, networking.DNS{}, host},
		{"bridge", &containertypes.HostConfig{}, bridge, "nameserver 10.0.2.3\n"},
		{"bridge with --dns", withDNS, bridge, "nameserver 9.9.9.9\nsearch example.org\noptions timeout:2\n"},
		{"user network", &containertypes.HostConfig{}, embedded, "nameserver 172.18.0.1\noptions ndots:0\n"},
		// --dns does not replace the embedded server; search and
		// options stay.
		{"user network with --dns", withDNS, embedded, "nameserver 172.18.0.1\nsearch example.org\noptions ndots:0 timeout:2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{}
			if got := containerResolvConf(host, e.containerDNS(tc.hc), tc.d); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// daemon.json's dns, dns-search and dns-opts stand in for each of a
// container's own that it leaves empty, as Docker's.
func TestContainerDNSDefaults(t *testing.T) {
	a := netip.MustParseAddr
	e := &Engine{opts: Options{DNS: DNSConfig{Servers: []netip.Addr{a("192.0.2.53")}, Search: []string{"corp"}, Options: []string{"ndots:2"}}}}
	for _, tc := range []struct {
		name string
		hc   *containertypes.HostConfig
		want DNSConfig
	}{
		{"none of its own", &containertypes.HostConfig{}, e.opts.DNS},
		{"its servers", &containertypes.HostConfig{DNS: []netip.Addr{a("9.9.9.9")}},
			DNSConfig{Servers: []netip.Addr{a("9.9.9.9")}, Search: []string{"corp"}, Options: []string{"ndots:2"}}},
		{"its search and options", &containertypes.HostConfig{DNSSearch: []string{"x"}, DNSOptions: []string{"rotate"}},
			DNSConfig{Servers: e.opts.DNS.Servers, Search: []string{"x"}, Options: []string{"rotate"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.containerDNS(tc.hc); !slices.Equal(got.Servers, tc.want.Servers) || !slices.Equal(got.Search, tc.want.Search) || !slices.Equal(got.Options, tc.want.Options) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := containerResolvConf("", e.containerDNS(&containertypes.HostConfig{}), networking.DNS{Nameservers: []string{"10.0.2.3"}}); got != "nameserver 192.0.2.53\nsearch corp\noptions ndots:2\n" {
		t.Errorf("default bridge with the daemon's dns: %q", got)
	}
}

func TestUserMounted(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *container.Container
		want bool
	}{
		{"none", &container.Container{Config: &containertypes.Config{}, HostConfig: &containertypes.HostConfig{}}, false},
		{"bind", &container.Container{Mounts: []containertypes.MountPoint{{Type: mount.TypeBind, Destination: "/etc/resolv.conf"}}}, true},
		{"bind elsewhere", &container.Container{Mounts: []containertypes.MountPoint{{Type: mount.TypeBind, Destination: "/etc"}}}, false},
		{"tmpfs", &container.Container{HostConfig: &containertypes.HostConfig{Tmpfs: map[string]string{"/etc/resolv.conf/": ""}}}, true},
		{"anonymous volume", &container.Container{Config: &containertypes.Config{Volumes: map[string]struct{}{"/etc/resolv.conf": {}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := userMounted(tc.c, "/etc/resolv.conf"); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
