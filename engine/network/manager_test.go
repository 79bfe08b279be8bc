package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
)

func TestPredefinedNetworks(t *testing.T) {
	drv := newFake()
	drv.reserved = []netip.Prefix{netip.MustParsePrefix("172.17.0.0/16"), netip.MustParsePrefix("10.0.2.0/24")}
	root := t.TempDir()
	m, err := New(context.Background(), Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	list, err := m.NetworkList(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range list {
		got = append(got, n.Name+"/"+n.Driver)
	}
	if !slices.Equal(got, []string{"bridge/bridge", "host/host", "none/null"}) {
		t.Fatalf("networks %v", got)
	}
	br, _ := m.NetworkInspect(context.Background(), "bridge")
	if c := br.IPAM.Config; len(c) != 1 || c[0].Subnet.String() != "172.18.0.0/16" || c[0].Gateway.String() != "172.18.0.1" {
		t.Errorf("default bridge avoids the host's 172.17.0.0/16: %+v", c)
	}
	if br.Options["com.docker.network.bridge.name"] != DefaultBridge {
		t.Errorf("options %v", br.Options)
	}
	// A restart keeps the records, IDs included.
	m2, err := New(context.Background(), Options{Root: root, Driver: newFake()})
	if err != nil {
		t.Fatal(err)
	}
	br2, _ := m2.NetworkInspect(context.Background(), "bridge")
	if br2.ID != br.ID || br2.IPAM.Config[0].Subnet != br.IPAM.Config[0].Subnet {
		t.Errorf("after a restart: %s %v, before %s %v", br2.ID, br2.IPAM.Config, br.ID, br.IPAM.Config)
	}
}

func TestConfigure(t *testing.T) {
	m := newManager(t, newFake())
	ctx := context.Background()
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "mynet", IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.9.0.0/24")}}}}); err != nil {
		t.Fatal(err)
	}
	static := func(ip string) *network.EndpointSettings {
		return &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: netip.MustParseAddr(ip)}}
	}
	tests := []struct {
		name string
		mode string
		eps  map[string]*network.EndpointSettings
		pb   network.PortMap
		dns  []netip.Addr
		err  error
		text string
		nets []string
	}{
		{name: "default", mode: "", nets: []string{"bridge"}},
		{name: "default by name", mode: "default", nets: []string{"bridge"}},
		{name: "user network", mode: "mynet", eps: map[string]*network.EndpointSettings{"mynet": {Aliases: []string{"db"}}}, nets: []string{"mynet"}},
		{name: "two networks", mode: "bridge", eps: map[string]*network.EndpointSettings{"mynet": nil}, nets: []string{"bridge", "mynet"}},
		{name: "static address", mode: "mynet", eps: map[string]*network.EndpointSettings{"mynet": static("10.9.0.9")}, nets: []string{"mynet"}},
		// As Docker, networks need not exist until the start.
		{name: "unknown network", mode: "nosuch", nets: []string{"nosuch"}},
		{name: "unknown extra network", mode: "bridge", eps: map[string]*network.EndpointSettings{"nosuch": nil}, nets: []string{"bridge", "nosuch"}},
		{name: "several user networks", mode: "mynet", eps: map[string]*network.EndpointSettings{"mynet": nil, "net1": nil, "net2": {Aliases: []string{"x"}}}, nets: []string{"mynet", "net1", "net2"}},
		{name: "alias on the default bridge", mode: "bridge", eps: map[string]*network.EndpointSettings{"bridge": {Aliases: []string{"a"}}}, err: errdefs.ErrInvalidArgument, text: "network-scoped alias is supported only for containers in user defined networks"},
		{name: "address on the default bridge", mode: "bridge", eps: map[string]*network.EndpointSettings{"bridge": static("172.17.0.9")}, err: errdefs.ErrInvalidArgument, text: "user specified IP address is supported on user defined networks only"},
		{name: "address outside the subnet", mode: "mynet", eps: map[string]*network.EndpointSettings{"mynet": static("10.8.0.9")}, err: errdefs.ErrInvalidArgument, text: "no configured subnet or ip-range contain the IP address 10.8.0.9"},
		{name: "host and a network", mode: "host", eps: map[string]*network.EndpointSettings{"mynet": nil}, err: errdefs.ErrInvalidArgument, text: "Container cannot be connected to network endpoints: host, mynet"},
		{name: "none and a network to be", mode: "none", eps: map[string]*network.EndpointSettings{"nosuch": nil}, err: errdefs.ErrInvalidArgument, text: "Container cannot be connected to network endpoints: none, nosuch"},
		{name: "container alone", mode: "container:abc", nets: []string{}},
		{name: "sctp port", mode: "bridge", pb: network.PortMap{network.MustParsePort("80/sctp"): {{}}}, err: errdefs.ErrNotImplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testContainer("c", &containertypes.HostConfig{NetworkMode: containertypes.NetworkMode(tt.mode), PortBindings: tt.pb, DNS: tt.dns})
			ns, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: tt.eps})
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.text) {
					t.Fatalf("err = %v, want %v %q", err, tt.err, tt.text)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for name, ep := range ns.Networks {
				names = append(names, name)
				if (ep.NetworkID == "") != (name == "nosuch" || name == "net1" || name == "net2") || ep.IPAddress.IsValid() {
					t.Errorf("endpoint config %s: %+v", name, ep)
				}
			}
			slices.Sort(names)
			if names == nil {
				names = []string{}
			}
			if !slices.Equal(names, tt.nets) {
				t.Errorf("networks %v, want %v", names, tt.nets)
			}
			if tt.mode == "" && c.HostConfig.NetworkMode != "bridge" {
				t.Errorf("mode not normalised: %q", c.HostConfig.NetworkMode)
			}
		})
	}
}

func TestAttachDefaultBridge(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	ctx := context.Background()
	lo := netip.MustParseAddr("127.0.0.1")
	c := testContainer("web", &containertypes.HostConfig{PortBindings: network.PortMap{
		network.MustParsePort("80"):     {{HostIP: lo, HostPort: "8080"}},
		network.MustParsePort("53/udp"): {{}},
	}})
	c.Config.ExposedPorts = network.PortSet{network.MustParsePort("443"): {}}
	att := configureAndAttach(t, m, c, nil)
	ep := att.Settings.Networks["bridge"]
	if ep == nil || ep.IPAddress.String() != "172.17.0.2" || ep.Gateway.String() != "172.17.0.1" || ep.IPPrefixLen != 16 ||
		ep.MacAddress.String() != "02:42:ac:11:00:02" || ep.EndpointID == "" || len(ep.DNSNames) != 0 {
		t.Errorf("endpoint %+v", ep)
	}
	if att.NetNSPath == "" || att.Settings.SandboxKey != att.NetNSPath || !drv.sandboxes[c.ID] {
		t.Errorf("sandbox %q", att.NetNSPath)
	}
	if !slices.Equal(att.Nameservers, []string{"10.0.2.3"}) || att.EmbeddedDNS || att.HostGateway != "10.0.2.2" || att.Addrs[0].String() != "172.17.0.2" {
		t.Errorf("attachment %+v", att)
	}
	ports := att.Settings.Ports
	if b := ports[network.MustParsePort("80")]; len(b) != 1 || b[0].HostIP != lo || b[0].HostPort != "8080" {
		t.Errorf("80/tcp: %+v", b)
	}
	if b := ports[network.MustParsePort("53/udp")]; len(b) != 2 || b[0].HostIP.String() != "0.0.0.0" || b[1].HostIP.String() != "::" {
		t.Errorf("53/udp: %+v", b)
	}
	if b, ok := ports[network.MustParsePort("443")]; !ok || b != nil {
		t.Errorf("exposed 443/tcp: %v %+v", ok, b)
	}
	for _, f := range drv.forwards {
		if f.ChildIP.String() != "172.17.0.2" {
			t.Errorf("forward to %s", f.ChildIP)
		}
	}
	c2 := testContainer("two", nil)
	att2, err := m.Attach(ctx, c2)
	if err != nil || att2.Addrs[0].String() != "172.17.0.3" {
		t.Fatalf("second container: %v %v", att2.Addrs, err)
	}
	for _, id := range []string{c.ID, c2.ID} {
		if err := m.Detach(ctx, id, networking.DetachOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if l := drv.leftovers(); l != "" {
		t.Errorf("after detach: %s", l)
	}
	if err := m.Detach(ctx, c.ID, networking.DetachOptions{}); err != nil {
		t.Errorf("second detach: %v", err)
	}
	// The cleanup of a run that ended late leaves a newer run alone.
	again, err := m.Attach(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Detach(ctx, c.ID, networking.DetachOptions{SandboxID: att.Settings.SandboxID}); err != nil || !drv.sandboxes[c.ID] {
		t.Errorf("the old run's detach removed the new run's network: %v", err)
	}
	if err := m.Detach(ctx, c.ID, networking.DetachOptions{SandboxID: again.Settings.SandboxID}); err != nil || drv.sandboxes[c.ID] {
		t.Errorf("the new run's detach: %v, sandboxes %v", err, drv.sandboxes)
	}
	att3, _ := m.Attach(ctx, testContainer("three", nil))
	if att3.Addrs[0].String() != "172.17.0.5" {
		t.Errorf("addresses are given serially: %v", att3.Addrs)
	}
}

// A port that cannot be published fails the attach with Docker's message
// and undoes everything: the forward made before it, the veth, the
// namespace, the address.
// The end of a run leaves its veths to die with the namespace (deleting
// them one by one is slow), unless others still share the namespace: then
// they are taken out of it, and either way nothing is left and the
// addresses are free again.
func TestDetachShared(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shared  bool
		unplugs int
	}{
		{"alone", false, 0},
		{"shared", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := newFake()
			m := newManager(t, drv)
			ctx := context.Background()
			c := testContainer("web", &containertypes.HostConfig{})
			att := configureAndAttach(t, m, c, nil)
			if err := m.Detach(ctx, c.ID, networking.DetachOptions{SandboxID: att.Settings.SandboxID, Shared: tc.shared}); err != nil {
				t.Fatal(err)
			}
			if drv.unplugs != tc.unplugs {
				t.Errorf("Unplug called %d times, want %d", drv.unplugs, tc.unplugs)
			}
			if l := drv.leftovers(); l != "" {
				t.Errorf("after detach: %s", l)
			}
			if _, taken := m.byName("bridge").pool.used[att.Addrs[0]]; taken {
				t.Errorf("address %s still taken", att.Addrs[0])
			}
		})
	}
}

// TestAttachInParallel: the namespaces and veths of several containers
// are made at once, not one at a time under the manager's lock.
func TestAttachInParallel(t *testing.T) {
	drv := newFake()
	const n = 3
	drv.overlap = newOverlapGate(n)
	m := newManager(t, drv)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testContainer(fmt.Sprintf("par%d", i), nil)
			if _, err := m.Attach(context.Background(), c); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	nw, _ := m.NetworkInspect(context.Background(), "bridge")
	if len(nw.Containers) != n {
		t.Errorf("%d endpoints on bridge, want %d", len(nw.Containers), n)
	}
}

func TestAttachRollback(t *testing.T) {
	drv := newFake()
	drv.taken[8081] = true
	m := newManager(t, drv)
	ctx := context.Background()
	c := testContainer("clash", &containertypes.HostConfig{PortBindings: network.PortMap{
		network.MustParsePort("70"): {{HostPort: "8070"}},
		network.MustParsePort("80"): {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "8081"}},
	}})
	_, err := m.Attach(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "failed to bind host port for 127.0.0.1:8081:172.17.0.2:80/tcp: address already in use") {
		t.Fatalf("attach with a taken port: %v", err)
	}
	if l := drv.leftovers(); l != "" {
		t.Errorf("left after the failed attach: %s", l)
	}
	n, _ := m.NetworkInspect(ctx, "bridge")
	if len(n.Containers) != 0 {
		t.Errorf("endpoints left: %v", n.Containers)
	}
	drv.failPlug = errors.New("no veth today")
	if _, err := m.Attach(ctx, testContainer("noveth", nil)); err == nil || !strings.Contains(err.Error(), "no veth today") {
		t.Errorf("attach with a failing plug: %v", err)
	}
	if l := drv.leftovers(); l != "" {
		t.Errorf("left after the failed plug: %s", l)
	}
}

func TestAttachUserNetworks(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	ctx := context.Background()
	resp, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "inner", Internal: true}); err != nil {
		t.Fatal(err)
	}
	c := testContainer("db", &containertypes.HostConfig{NetworkMode: "inner", PortBindings: network.PortMap{network.MustParsePort("5432"): {{}}}})
	ns, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		"inner": {Aliases: []string{"database"}},
		"app":   {Aliases: []string{"pg"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings = ns
	att, err := m.Attach(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	app, inner := att.Settings.Networks["app"], att.Settings.Networks["inner"]
	if app == nil || inner == nil || app.NetworkID != resp.ID {
		t.Fatalf("networks %v", att.Settings.Networks)
	}
	if !slices.Equal(inner.DNSNames, []string{"db", "database", c.ID[:12]}) || !slices.Equal(inner.Aliases, []string{"database"}) {
		t.Errorf("DNS names on inner: %v, aliases %v", inner.DNSNames, inner.Aliases)
	}
	if att.Addrs[0].String() != "172.18.0.2" && att.Addrs[0].String() != "172.19.0.2" {
		t.Errorf("addresses %v", att.Addrs)
	}
	if !att.EmbeddedDNS || len(att.Nameservers) != 1 || !strings.HasSuffix(att.Nameservers[0], ".0.1") || !slices.Equal(att.DNSOptions, []string{"ndots:0"}) {
		t.Errorf("resolver %+v", att)
	}
	// The ports go to the first network that is not internal.
	for _, f := range drv.forwards {
		if f.ChildIP != app.IPAddress {
			t.Errorf("forward to %s, want app's %s", f.ChildIP, app.IPAddress)
		}
	}
	if err := m.NetworkRemove(ctx, "app"); !errors.Is(err, errdefs.ErrPermissionDenied) || !strings.Contains(err.Error(), "has active endpoints") {
		t.Errorf("removing a network in use: %v", err)
	}
	if err := m.Detach(ctx, c.ID, networking.DetachOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.NetworkRemove(ctx, "app"); err != nil {
		t.Errorf("removing the network once unused: %v", err)
	}
	if drv.setup[resp.ID] {
		t.Error("the removed network's bridge is still set up")
	}
}

// A container created with no network mode but an endpoint on a user
// network (as testcontainers-go does) is on the default bridge first and
// on that network too; as in Docker, it asks the user network's embedded
// DNS server, which answers the aliases there.
func TestAttachBridgeAndUserNetwork(t *testing.T) {
	m := newManager(t, newFake())
	ctx := context.Background()
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	c := testContainer("client", &containertypes.HostConfig{})
	ns, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		"app": {Aliases: []string{"web"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings = ns
	att, err := m.Attach(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	app := att.Settings.Networks["app"]
	if att.Settings.Networks["bridge"] == nil || app == nil || att.Addrs[0].String() != "172.17.0.2" {
		t.Fatalf("networks %v, addresses %v", att.Settings.Networks, att.Addrs)
	}
	if !att.EmbeddedDNS || !slices.Equal(att.Nameservers, []string{app.Gateway.String()}) || !slices.Equal(att.DNSOptions, []string{"ndots:0"}) {
		t.Errorf("resolver %+v, want app's gateway %s", att, app.Gateway)
	}
}

// A network named at create need only exist when the container starts,
// as in Docker: the start fails while it is missing, and connects the
// container to it once it is made.
func TestAttachNetworkMadeAfterCreate(t *testing.T) {
	m := newManager(t, newFake())
	ctx := context.Background()
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "app"}); err != nil {
		t.Fatal(err)
	}
	c := testContainer("late", &containertypes.HostConfig{NetworkMode: "app"})
	ns, err := m.Configure(ctx, c, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		"app": {}, "later": {Aliases: []string{"l"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.NetworkSettings = ns
	if _, err := m.Attach(ctx, c); !errors.Is(err, errdefs.ErrNotFound) || err.Error() != "network later not found" {
		t.Fatalf("start before the network is made: %v", err)
	}
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "later"}); err != nil {
		t.Fatal(err)
	}
	att, err := m.Attach(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	later := att.Settings.Networks["later"]
	if att.Settings.Networks["app"] == nil || later == nil || len(att.Addrs) != 2 || !slices.Equal(later.Aliases, []string{"l"}) {
		t.Errorf("networks %v, addresses %v", att.Settings.Networks, att.Addrs)
	}
}

func TestConnectDisconnect(t *testing.T) {
	drv := newFake()
	m := newManager(t, drv)
	ctx := context.Background()
	if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: "n1", IPAM: &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.99.0.0/24")}}}}); err != nil {
		t.Fatal(err)
	}
	running := testContainer("run", nil)
	running.NetworkSettings, _ = m.Configure(ctx, running, nil)
	if _, err := m.Attach(ctx, running); err != nil {
		t.Fatal(err)
	}
	bridgeDNS := networking.DNS{Nameservers: []string{"10.0.2.3"}}
	if dns, ok := m.DNS(ctx, running.ID); !ok || !reflect.DeepEqual(dns, bridgeDNS) {
		t.Errorf("DNS on the default bridge: %+v %v", dns, ok)
	}
	name, ep, err := m.Connect(ctx, running, "n1", &network.EndpointSettings{Aliases: []string{"r"}})
	if err != nil || name != "n1" || ep.IPAddress.String() != "10.99.0.2" || ep.EndpointID == "" {
		t.Fatalf("connect a running container: %s %+v %v", name, ep, err)
	}
	// Connected to a user network, it asks that network's server, as a
	// container started on both would.
	if dns, ok := m.DNS(ctx, running.ID); !ok || !reflect.DeepEqual(dns, networking.DNS{Nameservers: []string{"10.99.0.1"}, DNSOptions: []string{"ndots:0"}, EmbeddedDNS: true}) {
		t.Errorf("DNS after the connect: %+v %v", dns, ok)
	}
	if len(drv.plugged) != 2 {
		t.Errorf("veths after the hot-plug: %v", drv.plugged)
	}
	for _, ep := range drv.plugged {
		if ep.IP.String() == "10.99.0.2" && ep.IfName != "eth1" {
			t.Errorf("hot-plugged interface %s", ep.IfName)
		}
	}
	if _, _, err := m.Connect(ctx, running, "n1", nil); !errors.Is(err, errdefs.ErrPermissionDenied) {
		t.Errorf("connecting twice: %v", err)
	}
	stopped := testContainer("stopped", nil)
	name, ep, err = m.Connect(ctx, stopped, "n1", &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: netip.MustParseAddr("10.99.0.77")}})
	if err != nil || name != "n1" || ep.IPAddress.IsValid() || ep.IPAMConfig.IPv4Address.String() != "10.99.0.77" {
		t.Fatalf("connect a stopped container: %+v %v", ep, err)
	}
	for _, tc := range []struct {
		mode containertypes.NetworkMode
		ref  string
	}{{"host", "n1"}, {"none", "n1"}, {"container:x", "n1"}, {"bridge", "host"}} {
		c := testContainer("m", &containertypes.HostConfig{NetworkMode: tc.mode})
		if _, _, err := m.Connect(ctx, c, tc.ref, nil); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("connect %s to %s: %v", tc.mode, tc.ref, err)
		}
	}
	running.NetworkSettings.Networks["n1"] = ep
	if name, err := m.Disconnect(ctx, running, "n1", false); err != nil || name != "n1" {
		t.Fatalf("disconnect: %s %v", name, err)
	}
	if len(drv.plugged) != 1 {
		t.Errorf("veths after disconnect: %v", drv.plugged)
	}
	if dns, ok := m.DNS(ctx, running.ID); !ok || !reflect.DeepEqual(dns, bridgeDNS) {
		t.Errorf("DNS after the disconnect: %+v %v", dns, ok)
	}
	if _, ok := m.DNS(ctx, stopped.ID); ok {
		t.Error("a container that does not run has a resolver")
	}
	if _, err := m.Disconnect(ctx, testContainer("other", nil), "n1", false); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("disconnect a container that is not connected: %v", err)
	}
	if _, err := m.Disconnect(ctx, running, "gone", false); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("disconnect from an unknown network: %v", err)
	}
}

// After a restart the running containers keep their addresses and the
// namespaces of the others go.
func TestRestore(t *testing.T) {
	drv := newFake()
	root := t.TempDir()
	ctx := context.Background()
	m, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	alive, dead, orphan := testContainer("alive", nil), testContainer("dead", nil), testContainer("orphan", nil)
	att, err := m.Attach(ctx, alive)
	if err != nil {
		t.Fatal(err)
	}
	alive.NetworkSettings = att.Settings
	if _, err := m.Attach(ctx, dead); err != nil {
		t.Fatal(err)
	}
	att, err = m.Attach(ctx, orphan)
	if err != nil {
		t.Fatal(err)
	}
	orphan.NetworkSettings = att.Settings
	for _, name := range []string{"aa", "zz"} {
		if _, err := m.NetworkCreate(ctx, network.CreateRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	multi := testContainer("multi", &containertypes.HostConfig{NetworkMode: "zz"})
	multiAtt := configureAndAttach(t, m, multi, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"zz": {}, "aa": {}}})
	multi.NetworkSettings = multiAtt.Settings
	// The next daemon: a new manager, the same records and sandboxes, but
	// the namespace of orphan (still running) went with the old daemon.
	drv.gone[orphan.ID] = true
	m2, err := New(ctx, Options{Root: root, Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := m2.Restore(ctx, []*container.Container{alive, orphan, multi})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lost, []string{orphan.ID}) {
		t.Errorf("lost = %v, want the orphan %s", lost, orphan.ID[:12])
	}
	if drv.sandboxes[dead.ID] || !drv.sandboxes[alive.ID] || drv.sandboxes[orphan.ID] {
		t.Errorf("sandboxes after restore: %v (alive %s, dead %s, orphan %s)", drv.sandboxes, alive.ID[:12], dead.ID[:12], orphan.ID[:12])
	}
	n, _ := m2.NetworkInspect(ctx, "bridge")
	if ep, ok := n.Containers[alive.ID]; !ok || ep.IPv4Address.String() != "172.17.0.2/16" || len(n.Containers) != 1 {
		t.Errorf("restored endpoints %v", n.Containers)
	}
	// The orphan's address (172.17.0.4) is free again; alive's is not.
	att3, err := m2.Attach(ctx, testContainer("new", nil))
	if err != nil || att3.Addrs[0].String() == "172.17.0.2" {
		t.Errorf("a new container got %v (%v): the restored address must stay taken", att3.Addrs, err)
	}
	// Restored in the order of its start: the server of its network
	// mode's network, which its resolv.conf names, stays its resolver.
	if dns, ok := m2.DNS(ctx, multi.ID); !ok || !slices.Equal(dns.Nameservers, multiAtt.Nameservers) {
		t.Errorf("resolver after the restore: %v %v, the start gave %v", dns.Nameservers, ok, multiAtt.Nameservers)
	}
	if err := m2.Detach(ctx, alive.ID, networking.DetachOptions{}); err != nil || drv.sandboxes[alive.ID] {
		t.Errorf("detaching the restored container: %v, sandboxes %v", err, drv.sandboxes)
	}
}
