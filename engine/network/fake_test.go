package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/engine/container"
	containertypes "github.com/moby/moby/api/types/container"
)

// fakeDriver keeps in memory what a real driver would make in the kernel,
// so that tests can check that nothing is left behind.
type fakeDriver struct {
	mu        sync.Mutex
	reserved  []netip.Prefix
	setup     map[string]bool      // network IDs
	sandboxes map[string]bool      // container IDs
	gone      map[string]bool      // container IDs whose namespace is gone
	plugged   map[string]*Endpoint // by HostIf
	pluggedIn map[string]string    // HostIf → the namespace's path
	unplugs   int                  // Unplug calls
	forwards  map[int]Forward
	nextID    int
	taken     map[uint16]bool // host ports another process holds
	failPlug  error
	// overlap, when set, makes Plug wait until that many Plug calls run
	// at once (or fail after a while).
	overlap *overlapGate
	// dns is where ListenDNS listened, by the address asked for.
	dns      map[netip.Addr]string
	upstream string // a fake upstream resolver (udp)
	// servers are the DNS servers DialIn reaches, by address: where they
	// listen on loopback (udp and tcp). Others are unreachable.
	servers map[netip.Addr]string
	// dialed records DialIn's calls: "path network addr".
	dialed []string
	// routes are the default routes of each namespace, by path: the
	// interface and gateway of each family ("" for none).
	routes map[string][2]string
}

func newFake() *fakeDriver {
	return &fakeDriver{setup: map[string]bool{}, sandboxes: map[string]bool{}, gone: map[string]bool{}, plugged: map[string]*Endpoint{}, pluggedIn: map[string]string{},
		forwards: map[int]Forward{}, taken: map[uint16]bool{}, dns: map[netip.Addr]string{}, routes: map[string][2]string{}}
}

func (f *fakeDriver) Reserved(context.Context) ([]netip.Prefix, error) { return f.reserved, nil }

func (f *fakeDriver) SetupNetwork(_ context.Context, n *Network) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setup[n.ID] = true
	return nil
}

func (f *fakeDriver) TeardownNetwork(_ context.Context, n *Network) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.setup, n.ID)
	return nil
}

func (f *fakeDriver) NewSandbox(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[id] = true
	return "/run/netns/" + id, nil
}

func (f *fakeDriver) RemoveSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sandboxes, id)
	// As the kernel: the namespace dies and its veths with it.
	for hostIf, path := range f.pluggedIn {
		if path == "/run/netns/"+id {
			delete(f.plugged, hostIf)
			delete(f.pluggedIn, hostIf)
		}
	}
	return nil
}

func (f *fakeDriver) Sandboxes(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.sandboxes {
		out = append(out, id)
	}
	return out, nil
}

// SandboxLive: a namespace is live unless the test said it was gone.
func (f *fakeDriver) SandboxLive(_ context.Context, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sandboxes[id] && !f.gone[id]
}

func (f *fakeDriver) Plug(_ context.Context, path string, n *Network, ep *Endpoint, routes Routes) error {
	if f.overlap != nil {
		if err := f.overlap.wait(); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.setup[n.ID] {
		return fmt.Errorf("network %s not set up", n.Name)
	}
	// The routes are taken first: a plug that fails may have moved them
	// (the real driver sets them last, but a failure to set the IPv6 one
	// comes after the IPv4 one moved).
	r := f.routes[path]
	if routes.V4 {
		r[0] = ep.IfName + " via " + n.Gateway.String()
	}
	if routes.V6 {
		r[1] = ep.IfName + " via " + n.Gateway6.String()
	}
	f.routes[path] = r
	if f.failPlug != nil {
		return f.failPlug
	}
	f.plugged[ep.HostIf] = ep
	f.pluggedIn[ep.HostIf] = path
	return nil
}

func (f *fakeDriver) Reroute(_ context.Context, path string, gw4, gw6 Gateway) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r [2]string
	for i, g := range []Gateway{gw4, gw6} {
		if g.IfName != "" {
			r[i] = g.IfName + " via " + g.Via.String()
		}
	}
	f.routes[path] = r
	return nil
}

// defaultRoutes are the default routes of the namespace at path.
func (f *fakeDriver) defaultRoutes(path string) [2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.routes[path]
}

func (f *fakeDriver) Unplug(_ context.Context, ep *Endpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.plugged, ep.HostIf)
	delete(f.pluggedIn, ep.HostIf)
	f.unplugs++
	return nil
}

func (f *fakeDriver) Publish(_ context.Context, fw Forward) (Forward, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fw.HostPort == 0 {
		fw.HostPort = uint16(40000 + f.nextID)
	}
	if f.taken[fw.HostPort] {
		return fw, fmt.Errorf("listen tcp 127.0.0.1:%d: bind: %w", fw.HostPort, syscall.EADDRINUSE)
	}
	f.nextID++
	fw.ID = f.nextID
	fw.DualStack = !fw.HostIP.IsValid()
	f.forwards[fw.ID] = fw
	return fw, nil
}

func (f *fakeDriver) Unpublish(_ context.Context, fw Forward) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.forwards, fw.ID)
	return nil
}

func (f *fakeDriver) Forwards(context.Context) ([]Forward, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Forward, 0, len(f.forwards))
	for _, fw := range f.forwards {
		out = append(out, fw)
	}
	return out, nil
}

// ListenDNS listens on a random loopback port, udp and tcp alike. The
// kernel picks the udp port; the tcp one of the same number may be taken
// by another process on the machine, and then another port is tried.
func (f *fakeDriver) ListenDNS(_ context.Context, addr netip.Addr) (net.PacketConn, net.Listener, error) {
	var last error
	for range 20 {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		l, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			pc.Close()
			last = err
			continue
		}
		f.mu.Lock()
		f.dns[addr] = pc.LocalAddr().String()
		f.mu.Unlock()
		return pc, l, nil
	}
	return nil, nil, last
}

func (f *fakeDriver) DialUpstream(ctx context.Context, network string) (net.Conn, error) {
	if f.upstream == "" {
		return nil, errors.New("no upstream")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, f.upstream)
}

func (f *fakeDriver) DialIn(ctx context.Context, path, network string, addr netip.AddrPort) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, path+" "+network+" "+addr.String())
	real, ok := f.servers[addr.Addr()]
	f.mu.Unlock()
	if !ok || addr.Port() != 53 {
		return nil, fmt.Errorf("dial %s %s: %w", network, addr, syscall.ECONNREFUSED)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, real)
}

func (f *fakeDriver) HostGateway() netip.Addr { return netip.MustParseAddr("10.0.2.2") }
func (f *fakeDriver) Nameserver() netip.Addr  { return netip.MustParseAddr("10.0.2.3") }

// empty reports what the driver still holds.
func (f *fakeDriver) leftovers() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sandboxes)+len(f.plugged)+len(f.forwards) == 0 {
		return ""
	}
	return fmt.Sprintf("sandboxes %v, veths %v, forwards %v", f.sandboxes, f.plugged, f.forwards)
}

func newManager(t *testing.T, drv Driver) *Manager {
	t.Helper()
	m, err := New(context.Background(), Options{Root: t.TempDir(), Driver: drv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// testContainer is a container record as ContainerCreate makes it.
func testContainer(name string, hc *containertypes.HostConfig) *container.Container {
	if hc == nil {
		hc = &containertypes.HostConfig{}
	}
	id := container.NewID()
	return &container.Container{
		ID:         id,
		Name:       "/" + name,
		Created:    time.Now(),
		Config:     &containertypes.Config{Hostname: id[:12], Image: "busybox"},
		HostConfig: hc,
	}
}

// overlapGate lets callers through once n of them wait at once.
type overlapGate struct {
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
}

func newOverlapGate(n int) *overlapGate { return &overlapGate{n: n, open: make(chan struct{})} }

func (g *overlapGate) wait() error {
	g.mu.Lock()
	g.arrived++
	if g.arrived == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	select {
	case <-g.open:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%d of %d plugs ran at once", g.arrived, g.n)
	}
}
