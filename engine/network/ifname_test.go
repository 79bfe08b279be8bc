package network

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// An endpoint's interface takes the name its driver option asks for
// (Compose's interface_name); the others take the first free ethN.
func TestInterfaceNames(t *testing.T) {
	f := newFake()
	m := newManager(t, f)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	c := testContainer("named", &containertypes.HostConfig{NetworkMode: "a"})
	ns, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		"a": {},
		"b": {DriverOpts: map[string]string{IfnameOption: "eth1"}},
		"c": {DriverOpts: map[string]string{IfnameOption: "backend"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings = ns
	if _, err := m.Attach(ctx, c); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ep := range f.plugged {
		names = append(names, ep.IfName)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"backend", "eth0", "eth1"}) {
		t.Fatalf("interfaces %v", names)
	}

	// A name taken twice, and one the kernel would refuse.
	for opt, class := range map[string]error{"eth0": errdefs.ErrConflict, "much-too-long-name": errdefs.ErrInvalidArgument, "a/b": errdefs.ErrInvalidArgument} {
		if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "d-" + opt[:1]}); err != nil && !errdefs.IsConflict(err) {
			t.Fatal(err)
		}
		_, _, err := m.Connect(ctx, c, "d-"+opt[:1], &network.EndpointSettings{DriverOpts: map[string]string{IfnameOption: opt}})
		if !errors.Is(err, class) {
			t.Errorf("interface name %q: %v, want %v", opt, err, class)
		}
	}
}
