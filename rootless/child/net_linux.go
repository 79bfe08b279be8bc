package child

import (
	"errors"
	"fmt"
	"net"

	"github.com/rootless-containers/rootlesskit/v3/pkg/messages"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// configureNetwork brings up the detached namespace's loopback and the tap
// device slirp4netns created there, with the address, MTU and default
// route the parent's network driver chose (what rootlesskit's child does
// with ip(8), through netlink here), from a thread that enters the
// namespace and ends there.
func configureNetwork(path string, m *messages.ParentInitNetworkDriverCompleted) error {
	if m.Dev == "" {
		return errors.New("the network driver named no device")
	}
	ip, gw := net.ParseIP(m.IP).To4(), net.ParseIP(m.Gateway).To4()
	if ip == nil || gw == nil {
		return fmt.Errorf("address %q, gateway %q: want IPv4", m.IP, m.Gateway)
	}
	return onThrowawayThread(func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("entering it: %w", err)
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return fmt.Errorf("lo up: %w", err)
		}
		dev, err := netlink.LinkByName(m.Dev)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMTU(dev, m.MTU); err != nil {
			return fmt.Errorf("%s mtu %d: %w", m.Dev, m.MTU, err)
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(m.Netmask, 32)}}
		if err := netlink.AddrAdd(dev, addr); err != nil {
			return fmt.Errorf("%s address %s: %w", m.Dev, addr.IPNet, err)
		}
		if err := netlink.LinkSetUp(dev); err != nil {
			return fmt.Errorf("%s up: %w", m.Dev, err)
		}
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: dev.Attrs().Index, Gw: gw}); err != nil {
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
		return nil
	})
}
