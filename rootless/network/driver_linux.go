package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"

	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/rootless-containers/rootlesskit/v3/pkg/api/client"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var _ enet.Driver = (*Driver)(nil)

// Options configures a Driver.
type Options struct {
	// DetachedNetNS is the namespace slirp4netns serves
	// ($ROOTLESSKIT_STATE_DIR/netns).
	DetachedNetNS string
	// SandboxDir holds the containers' namespaces, one bind-mounted nsfs
	// file per container ID.
	SandboxDir string
	// PortAPI is rootlesskit's API socket; "" publishes no ports.
	PortAPI string
	// Uplink is the device traffic leaves by ("tap0").
	Uplink string
	// HostGateway is where the host's loopback is reached (10.0.2.2) and
	// Nameserver slirp4netns's DNS forwarder (10.0.2.3).
	HostGateway, Nameserver netip.Addr
	Logger                  *slog.Logger
}

// Driver implements engine/network.Driver in the detached namespace.
type Driver struct {
	o      Options
	log    *slog.Logger
	ns     *nsThread
	link   *netlink.Handle // in the detached namespace
	nat    *nat            // nil when nftables is not usable
	ports  client.Client   // nil without PortAPI
	ipv6   bool            // the host has IPv6: listeners on all addresses take both
	mu     sync.Mutex      // serialises port probing and publishing
	netMu  sync.Mutex      // serialises changes to bridges and NAT rules
	uplink netip.Prefix
	stop   chan struct{} // closed by Close
}

// New enters the detached namespace (on a thread of its own), turns on
// forwarding and prepares NAT. A NAT that cannot be set up is a warning,
// not an error: containers then reach each other and published ports, but
// not the outside; Warning says so.
func New(ctx context.Context, o Options) (*Driver, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Uplink == "" {
		o.Uplink = "tap0"
	}
	if err := os.MkdirAll(o.SandboxDir, 0o700); err != nil {
		return nil, err
	}
	t, err := startNSThread(o.DetachedNetNS)
	if err != nil {
		return nil, fmt.Errorf("entering the detached network namespace %s: %w", o.DetachedNetNS, err)
	}
	d := &Driver{o: o, log: o.Logger, ns: t, stop: make(chan struct{})}
	err = t.do(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		d.link = h
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644); err != nil {
			return fmt.Errorf("enabling IPv4 forwarding: %w", err)
		}
		d.uplink = uplinkPrefix(h, o.Uplink)
		n, err := newNAT(o.Uplink)
		if err != nil {
			d.log.Warn("WARNING: no NAT: containers on bridge networks cannot reach the host or the outside", "err", err)
			return nil
		}
		d.nat = n
		return nil
	})
	if err != nil {
		t.stop()
		return nil, err
	}
	if o.PortAPI != "" {
		c, err := client.New(o.PortAPI)
		if err != nil {
			t.stop()
			return nil, fmt.Errorf("rootlesskit API %s: %w", o.PortAPI, err)
		}
		d.ports = c
		go d.reportSourceAddress(context.WithoutCancel(ctx))
	}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		d.ipv6 = true
	}
	return d, nil
}

// Warning is what /info should say about this driver ("" when all is well).
func (d *Driver) Warning() string {
	if d.nat == nil {
		return "no NAT (nftables is not usable): containers on bridge networks cannot reach the host or the outside"
	}
	return ""
}

// Close leaves the detached namespace. Bridges and veths die with it.
func (d *Driver) Close() error {
	close(d.stop)
	if d.ports != nil {
		d.ports.Close()
	}
	d.ns.stop()
	return nil
}

func uplinkPrefix(h *netlink.Handle, name string) netip.Prefix {
	l, err := h.LinkByName(name)
	if err != nil {
		return netip.Prefix{}
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) == 0 {
		return netip.Prefix{}
	}
	ip, _ := netip.AddrFromSlice(addrs[0].IP.To4())
	ones, _ := addrs[0].Mask.Size()
	return netip.PrefixFrom(ip, ones).Masked()
}

// Reserved implements engine/network.Driver: the host's routes (read in
// the host's namespace, where the engine runs) and the uplink's network.
func (d *Driver) Reserved(ctx context.Context) ([]netip.Prefix, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("reading the host's routes: %w", err)
	}
	var out []netip.Prefix
	for _, r := range routes {
		if r.Dst == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(r.Dst.IP.To4())
		ones, _ := r.Dst.Mask.Size()
		if ok && ones > 0 && !ip.IsLoopback() {
			out = append(out, netip.PrefixFrom(ip, ones).Masked())
		}
	}
	if d.uplink.IsValid() {
		out = append(out, d.uplink)
	}
	return out, nil
}

// HostGateway implements engine/network.Driver.
func (d *Driver) HostGateway() netip.Addr { return d.o.HostGateway }

// Nameserver implements engine/network.Driver.
func (d *Driver) Nameserver() netip.Addr { return d.o.Nameserver }

// nsThread runs functions on OS threads that live in the detached network
// namespace. A thread never returns to the host's namespace (it could not:
// that one belongs to the initial user namespace), so its goroutine keeps
// it locked and Go destroys the thread when it ends.
//
// There are nsWorkers of them: one thread made every container's
// namespace and veth in turn, and under concurrent starts (make bench's
// 100 containers by 10 clients) the queue for it was most of
// start/network: a median of 37-44 ms against 4 ms alone. Functions that
// must not overlap (a network's bridge and rules) take Driver.netMu.
type nsThread struct {
	fd   *os.File // the detached namespace, to come back to from others
	jobs chan nsJob
	done chan struct{}
	once sync.Once
}

type nsJob struct {
	fn  func() error
	res chan error
}

// errThreadLost says a function left the thread in another namespace.
var errThreadLost = errors.New("the network namespace thread could not return to the detached namespace")

func startNSThread(path string) (*nsThread, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	t := &nsThread{fd: f, jobs: make(chan nsJob), done: make(chan struct{})}
	for range nsWorkers {
		if err := t.spawn(); err != nil {
			t.stop()
			return nil, err
		}
	}
	return t, nil
}

// nsWorkers is how many threads serve the detached namespace.
const nsWorkers = 3

// spawn starts a thread's goroutine; a lost thread is replaced by a new
// one.
func (t *nsThread) spawn() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see nsThread
		if err := unix.Setns(int(t.fd.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for {
			select {
			case j := <-t.jobs:
				err := j.fn()
				if !t.inDetached() {
					// Die with this thread and let another take over.
					if serr := t.spawn(); serr != nil {
						err = errors.Join(err, errThreadLost, serr)
					}
					j.res <- err
					return
				}
				j.res <- err
			case <-t.done:
				return
			}
		}
	}()
	return <-errc
}

// inDetached reports whether the calling thread is in the detached
// namespace.
func (t *nsThread) inDetached() bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(t.fd.Fd()), &a) != nil || unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), &b) != nil {
		return false
	}
	return a.Ino == b.Ino && a.Dev == b.Dev
}

// do runs fn on the thread and returns its error.
func (t *nsThread) do(fn func() error) error {
	j := nsJob{fn: fn, res: make(chan error, 1)}
	select {
	case t.jobs <- j:
	case <-t.done:
		return errors.New("the network driver is closed")
	}
	return <-j.res
}

// back returns the thread to the detached namespace after fn entered
// another; on failure the thread is lost (do replaces it).
func (t *nsThread) back() error {
	if err := unix.Setns(int(t.fd.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("%w: %v", errThreadLost, err)
	}
	return nil
}

// stop ends the thread; no do may be running.
func (t *nsThread) stop() {
	t.once.Do(func() {
		close(t.done)
		t.fd.Close()
	})
}
