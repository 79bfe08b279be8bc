package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The driver's tests make bridges, veths and nftables rules for real, in
// namespaces of their own: TestMain re-runs the test binary in a new user,
// mount and network namespace (mapping only the caller's uid to 0, the
// single-UID mode), so no host interface is ever touched, and the tests run
// the same as root and as an ordinary user.
const nsEnv = "HUTCH_NETWORK_TEST_IN_NS"

func TestMain(m *testing.M) {
	if os.Getenv(nsEnv) == "" {
		cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), nsEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
		}
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "rootless/network tests: cannot re-run in new namespaces:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The mount namespace is a copy: keep the bind mounts of the tests in it.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "making / private:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// detachedNS makes a network namespace standing for rootlesskit's detached
// one, bind-mounted on a file, with a "tap0" (a veth whose peer stays
// there) at 10.0.2.100/24.
func detachedNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "netns")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(path, unix.MNT_DETACH) })
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the thread dies with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "", unix.MS_BIND, ""); err != nil {
			errc <- err
			return
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name = "tap0"
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "tap0peer"}); err != nil {
			errc <- err
			return
		}
		tap, err := netlink.LinkByName("tap0")
		if err == nil {
			err = netlink.AddrAdd(tap, &netlink.Addr{IPNet: ipNet(netip.MustParseAddr("10.0.2.100"), 24)})
		}
		if err == nil { // where slirp4netns's DNS would be
			err = netlink.AddrAdd(tap, &netlink.Addr{IPNet: ipNet(netip.MustParseAddr("10.0.2.3"), 32)})
		}
		if err == nil {
			err = loopbackUp()
		}
		if err == nil {
			err = netlink.LinkSetUp(tap)
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("making the detached namespace: %v", err)
	}
	return path
}

// inNS runs fn on a thread in the namespace at path; the thread is
// dropped afterwards.
func inNS(t *testing.T, path string, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func newDriver(t *testing.T) (*Driver, string) {
	t.Helper()
	detached := detachedNS(t)
	d, err := New(context.Background(), Options{
		DetachedNetNS: detached,
		SandboxDir:    filepath.Join(t.TempDir(), "sandboxes"),
		Uplink:        "tap0",
		HostGateway:   netip.MustParseAddr("10.0.2.2"),
		Nameserver:    netip.MustParseAddr("10.0.2.3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, detached
}

func testNetwork(name, subnet string, internal bool) *enet.Network {
	p := netip.MustParsePrefix(subnet)
	id := strings.Repeat(name[:1], 64)
	return &enet.Network{ID: id, Name: name, Driver: "bridge", Subnet: p, Gateway: p.Addr().Next(), Bridge: "br-" + id[:12], Internal: internal}
}

func TestDriverLifecycle(t *testing.T) {
	d, detached := newDriver(t)
	ctx := context.Background()
	if d.Warning() != "" {
		t.Fatalf("NAT: %s", d.Warning())
	}
	if !d.uplink.IsValid() || d.uplink.String() != "10.0.2.0/24" {
		t.Errorf("uplink prefix %v", d.uplink)
	}
	if r, err := d.Reserved(ctx); err != nil || !slices.Contains(r, netip.MustParsePrefix("10.0.2.0/24")) {
		t.Errorf("reserved %v, %v", r, err)
	}
	n := testNetwork("app", "172.30.0.0/24", false)
	for range 2 { // idempotent
		if err := d.SetupNetwork(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	id := strings.Repeat("ab", 32)
	path, err := d.NewSandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := d.Sandboxes(ctx); !slices.Equal(ids, []string{id}) {
		t.Errorf("sandboxes %v", ids)
	}
	if !d.SandboxLive(ctx, id) {
		t.Error("a new sandbox is not live")
	}
	// What a daemon restarted in a new mount namespace finds: the file
	// without the bind mount on it.
	bare := strings.Repeat("ef", 32)
	if err := os.WriteFile(filepath.Join(d.o.SandboxDir, bare), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d.SandboxLive(ctx, bare) || d.SandboxLive(ctx, "../"+id) {
		t.Error("a bare file (or a bad ID) is a live sandbox")
	}
	if err := d.RemoveSandbox(ctx, bare); err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr("172.30.0.2")
	ep := &enet.Endpoint{ID: strings.Repeat("cd", 32), IP: ip, MAC: net.HardwareAddr{2, 0x42, 172, 30, 0, 2}, IfName: "eth0", HostIf: "vethcdcdcdcd"}
	if err := d.Plug(ctx, path, n, ep, enet.Routes{V4: true}); err != nil {
		t.Fatal(err)
	}

	// The detached namespace: the bridge with the gateway, the veth on it,
	// forwarding on, the rules tagged with the network.
	inNS(t, detached, func() error {
		br, err := netlink.LinkByName(n.Bridge)
		if err != nil {
			return err
		}
		if br.Attrs().MTU != enet.MTU || br.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("bridge mtu %d flags %v", br.Attrs().MTU, br.Attrs().Flags)
		}
		addrs, _ := netlink.AddrList(br, netlink.FAMILY_V4)
		if len(addrs) != 1 || addrs[0].IPNet.String() != "172.30.0.1/24" {
			t.Errorf("bridge addresses %v", addrs)
		}
		veth, err := netlink.LinkByName(ep.HostIf)
		if err != nil {
			return err
		}
		if veth.Attrs().MasterIndex != br.Attrs().Index || veth.Attrs().MTU != enet.MTU {
			t.Errorf("veth master %d mtu %d", veth.Attrs().MasterIndex, veth.Attrs().MTU)
		}
		// One queue each way, asked for at creation (link_linux.go).
		if a := veth.Attrs(); a.NumTxQueues != 1 || a.NumRxQueues != 1 {
			t.Errorf("veth has %d tx and %d rx queues, want 1 and 1", a.NumTxQueues, a.NumRxQueues)
		}
		if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(b)) != "1" {
			t.Errorf("ip_forward %q", b)
		}
		if got := ipv6Addrs(t, ep.HostIf); got != 0 {
			t.Errorf("%d IPv6 addresses on the bridge end of the veth, want none (IPv6 off)", got)
		}
		if got := countRules(t, n.ID); got != 4 {
			t.Errorf("%d nftables rules for the network, want 4 (masquerade, 2 accepts, 1 drop)", got)
		}
		return nil
	})
	// The container's namespace: eth0 with the address, the MAC, the MTU,
	// the default route; loopback up.
	inNS(t, path, func() error {
		eth, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if eth.Attrs().HardwareAddr.String() != ep.MAC.String() || eth.Attrs().MTU != enet.MTU {
			t.Errorf("eth0 mac %s mtu %d", eth.Attrs().HardwareAddr, eth.Attrs().MTU)
		}
		addrs, _ := netlink.AddrList(eth, netlink.FAMILY_V4)
		if len(addrs) != 1 || addrs[0].IPNet.String() != "172.30.0.2/24" {
			t.Errorf("eth0 addresses %v", addrs)
		}
		routes, _ := netlink.RouteList(nil, netlink.FAMILY_V4)
		var gw string
		for _, r := range routes {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() {
				gw = r.Gw.String()
			}
		}
		if gw != "172.30.0.1" {
			t.Errorf("default route via %q: %v", gw, routes)
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil || lo.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("loopback: %v %v", lo, err)
		}
		if got := ipv6Addrs(t, "eth0"); got != 0 {
			t.Errorf("%d IPv6 addresses on eth0, want none (IPv6 off, as on Docker's IPv4-only networks)", got)
		}
		if got := ipv6Addrs(t, "lo"); got != 1 {
			t.Errorf("%d IPv6 addresses on lo, want ::1", got)
		}
		return nil
	})

	// The embedded DNS server's sockets are in the detached namespace: the
	// container reaches them at its gateway.
	pc, l, err := d.ListenDNS(ctx, n.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	defer l.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	inNS(t, path, func() error {
		c, err := net.DialTimeout("tcp", "172.30.0.1:53", 5*time.Second)
		if err != nil {
			return fmt.Errorf("container to its gateway's DNS port: %w", err)
		}
		return c.Close()
	})
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	// The upstream resolver is dialled from the detached namespace.
	var upstream net.PacketConn
	inNS(t, detached, func() error {
		var err error
		upstream, err = net.ListenPacket("udp4", "10.0.2.3:53")
		return err
	})
	defer upstream.Close()
	go func() {
		buf := make([]byte, 64)
		n, from, err := upstream.ReadFrom(buf)
		if err == nil {
			upstream.WriteTo(append([]byte("echo "), buf[:n]...), from)
		}
	}()
	conn, err := d.DialUpstream(ctx, "udp")
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("query")); err != nil {
		t.Errorf("query upstream: %v", err)
	}
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "echo query" {
		t.Errorf("upstream answer %q, %v", buf[:n], err)
	}
	conn.Close()

	if _, err := d.Publish(ctx, enet.Forward{Proto: "tcp", HostPort: 8080, ChildIP: ip, ChildPort: 80}); err == nil {
		t.Error("publish without a port driver succeeded")
	}

	if err := d.Unplug(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if err := d.Unplug(ctx, ep); err != nil {
		t.Errorf("second unplug: %v", err)
	}
	if err := d.RemoveSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveSandbox(ctx, id); err != nil {
		t.Errorf("second removal: %v", err)
	}
	if ids, _ := d.Sandboxes(ctx); len(ids) != 0 {
		t.Errorf("sandboxes after removal %v", ids)
	}
	if d.SandboxLive(ctx, id) {
		t.Error("a removed sandbox is live")
	}
	if err := d.TeardownNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	inNS(t, detached, func() error {
		links, _ := netlink.LinkList()
		for _, l := range links {
			if name := l.Attrs().Name; name != "lo" && name != "tap0" && name != "tap0peer" {
				t.Errorf("link %s left", name)
			}
		}
		if got := countRules(t, n.ID); got != 0 {
			t.Errorf("%d rules left", got)
		}
		return nil
	})
}

// DialIn's sockets are in the container's namespace: its loopback is the
// container's own, not the detached namespace's, over udp and tcp.
func TestDialIn(t *testing.T) {
	d, detached := newDriver(t)
	ctx := context.Background()
	id := strings.Repeat("12", 32)
	path, err := d.NewSandbox(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer d.RemoveSandbox(ctx, id)
	echo := func(ns, who string) {
		var pc net.PacketConn
		var l net.Listener
		inNS(t, ns, func() error {
			var err error
			if pc, err = net.ListenPacket("udp4", "127.0.0.1:53"); err != nil {
				return err
			}
			l, err = net.Listen("tcp4", "127.0.0.1:53")
			return err
		})
		t.Cleanup(func() { pc.Close(); l.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				pc.WriteTo(append([]byte(who+" "), buf[:n]...), from)
			}
		}()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(who))
				c.Close()
			}
		}()
	}
	echo(detached, "detached")
	echo(path, "container")
	server := netip.MustParseAddrPort("127.0.0.1:53")
	for _, proto := range []string{"udp", "tcp"} {
		conn, err := d.DialIn(ctx, path, proto, server)
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		want := "container"
		if proto == "udp" {
			want = "container query"
			if _, err := conn.Write([]byte("query")); err != nil {
				t.Fatal(err)
			}
		}
		buf := make([]byte, 64)
		if n, err := conn.Read(buf); err != nil || string(buf[:n]) != want {
			t.Errorf("%s: answer %q, %v; want %q", proto, buf[:n], err, want)
		}
		conn.Close()
	}
	if _, err := d.DialIn(ctx, filepath.Join(t.TempDir(), "nosuch"), "udp", server); err == nil {
		t.Error("dialled from a namespace that does not exist")
	}
}

// ipv6Addrs counts the IPv6 addresses of the link name in the calling
// thread's namespace, and fails the test unless its disable_ipv6 agrees:
// 1 with none, 0 with some.
func ipv6Addrs(t *testing.T, name string) int {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6")
	if err != nil {
		t.Fatal(err)
	}
	if off := strings.TrimSpace(string(b)) == "1"; off != (len(addrs) == 0) {
		t.Errorf("%s: disable_ipv6 %q with IPv6 addresses %v", name, b, addrs)
	}
	return len(addrs)
}

// countRules counts the rules of hutch's table tagged with a network ID,
// from the calling thread's namespace.
func countRules(t *testing.T, id string) int {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	table := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: tableName}
	n := 0
	for _, chain := range []string{"postrouting", "forward"} {
		rules, err := c.GetRules(table, &nftables.Chain{Name: chain, Table: table})
		if err != nil {
			t.Fatalf("rules of %s: %v", chain, err)
		}
		for _, r := range rules {
			if string(r.UserData) == id {
				n++
			}
		}
	}
	return n
}

func TestInternalNetworkRules(t *testing.T) {
	for _, tt := range []struct {
		internal bool
		want     []string
	}{
		{false, []string{"postrouting:masq", "forward:accept", "forward:accept", "forward:drop"}},
		{true, []string{"forward:accept", "forward:drop", "forward:drop"}},
	} {
		var got []string
		for _, r := range rulesFor(testNetwork("n", "10.1.0.0/16", tt.internal), "tap0") {
			var kind string
			switch e := r.Exprs[len(r.Exprs)-1].(type) {
			case *expr.Masq:
				kind = "masq"
			case *expr.Verdict:
				kind = map[expr.VerdictKind]string{expr.VerdictAccept: "accept", expr.VerdictDrop: "drop"}[e.Kind]
			}
			if string(r.UserData) != strings.Repeat("n", 64) {
				t.Errorf("rule without the network's ID: %q", r.UserData)
			}
			got = append(got, r.chain+":"+kind)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("internal=%v rules %v, want %v", tt.internal, got, tt.want)
		}
	}
}

func TestHelpers(t *testing.T) {
	for bits, want := range map[int]string{0: "[0 0 0 0]", 16: "[255 255 0 0]", 20: "[255 255 240 0]", 32: "[255 255 255 255]"} {
		if got := fmt.Sprint(maskBytes(bits)); got != want {
			t.Errorf("maskBytes(%d) = %s", bits, got)
		}
	}
	if b := ifname("hutch0"); len(b) != 16 || string(b[:6]) != "hutch0" || b[6] != 0 {
		t.Errorf("ifname %v", b)
	}
	for id, ok := range map[string]bool{strings.Repeat("a", 64): true, "../../etc": false, strings.Repeat("A", 64): false, "": false} {
		if validID(id) != ok {
			t.Errorf("validID(%q) = %v", id, !ok)
		}
	}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{errors.New("listen tcp 127.0.0.1:80: bind: address already in use"), true},
		{fmt.Errorf("x: %w", syscall.EADDRINUSE), true},
		{errors.New("conflict with ID 3"), true},
		{errors.New("permission denied"), false},
	} {
		if inUse(tt.err) != tt.want {
			t.Errorf("inUse(%v) = %v", tt.err, !tt.want)
		}
	}
}

// A driver started in a namespace an earlier one served (live restore)
// keeps that one's rules in force, and setting the network up again
// replaces them rather than adding a second set.
func TestNATKeptAcrossDrivers(t *testing.T) {
	d, detached := newDriver(t)
	ctx := context.Background()
	n := testNetwork("k", "10.77.0.0/24", false)
	if err := d.SetupNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	if d.nat == nil {
		t.Fatal("no NAT: nftables is not usable here")
	}
	d2, err := New(ctx, Options{
		DetachedNetNS: detached,
		SandboxDir:    filepath.Join(t.TempDir(), "sandboxes"),
		Uplink:        "tap0",
		HostGateway:   netip.MustParseAddr("10.0.2.2"),
		Nameserver:    netip.MustParseAddr("10.0.2.3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	inNS(t, detached, func() error {
		if got := countRules(t, n.ID); got != 4 {
			t.Errorf("%d rules of the network once the next driver started, want its 4 kept", got)
		}
		return nil
	})
	if err := d2.SetupNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	inNS(t, detached, func() error {
		if got := countRules(t, n.ID); got != 4 {
			t.Errorf("%d rules after the network's set-up again, want 4", got)
		}
		return nil
	})
}
