package network

import (
	"context"
	"net/netip"
	"testing"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// With live restore the port driver's forwards outlive the engine: the
// next one gives each back to the restored container it leads to (its
// stop removes it) and removes those of containers that ended; the user
// network of a restored container gets its DNS server again.
func TestRestoreKeepsForwards(t *testing.T) {
	drv := newFake()
	root := t.TempDir()
	ctx := context.Background()
	m, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "keepnet"}); err != nil {
		t.Fatal(err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	web := testContainer("web", &containertypes.HostConfig{NetworkMode: "keepnet", PortBindings: network.PortMap{
		network.MustParsePort("80"): {{HostIP: lo, HostPort: "8080"}},
	}})
	web.NetworkSettings = configureAndAttach(t, m, web, nil).Settings
	ended := testContainer("ended", &containertypes.HostConfig{PortBindings: network.PortMap{
		network.MustParsePort("80"): {{HostIP: lo, HostPort: "8081"}},
	}})
	configureAndAttach(t, m, ended, nil)
	if len(drv.forwards) != 2 {
		t.Fatalf("forwards before the restart: %v", drv.forwards)
	}
	webIP := web.NetworkSettings.Networks["keepnet"].IPAddress

	m2, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	if lost, err := m2.Restore(ctx, []*container.Container{web}); err != nil || len(lost) != 0 {
		t.Fatalf("Restore: lost %v, %v", lost, err)
	}
	if len(drv.forwards) != 1 {
		t.Fatalf("forwards after the restore: %v, want web's alone", drv.forwards)
	}
	for _, f := range drv.forwards {
		if f.ChildIP != webIP || f.HostPort != 8080 {
			t.Errorf("the forward kept is %+v, want web's (%s:80 from 8080)", f, webIP)
		}
	}
	if n := m2.byName("keepnet"); n == nil || n.dns == nil || !n.up {
		t.Errorf("keepnet after the restore: %+v, want it up with its DNS server", n)
	}
	if got := m2.lookup(m2.byName("keepnet").ID, webIP, "web."); len(got) != 1 || got[0] != webIP {
		t.Errorf("web by name after the restore: %v", got)
	}
	if err := m2.Detach(ctx, web.ID, networking.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(drv.forwards) != 0 {
		t.Errorf("forwards after web's stop: %v", drv.forwards)
	}
	m2.Close()
	m.Close()
}
