package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NewSandbox implements engine/network.Driver: a new network namespace,
// made on the namespace thread (so that it belongs to the engine's user
// namespace), bind-mounted at SandboxDir/id, with loopback up.
func (d *Driver) NewSandbox(ctx context.Context, id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("invalid container ID %q", id)
	}
	path := filepath.Join(d.o.SandboxDir, id)
	unix.Unmount(path, unix.MNT_DETACH) // left by a start that failed half-way
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return "", err
	}
	f.Close()
	err = d.ns.do(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		err := unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "", unix.MS_BIND, "")
		if err != nil {
			err = fmt.Errorf("bind-mounting the namespace at %s: %w", path, err)
		} else if err = disableIPv6("default"); err == nil {
			err = loopbackUp()
		}
		return errors.Join(err, d.ns.back())
	})
	if err != nil {
		unix.Unmount(path, unix.MNT_DETACH)
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// disableIPv6 turns IPv6 off on the interface iface ("default": on every
// interface made from now on) of the calling thread's namespace. Docker
// does so on the interfaces of IPv4-only networks, which all of ours are:
// no link-local address and no multicast groups, so nothing for neighbour
// discovery to poison, and no duplicate address detection, listener
// reports or router solicitations flooded to every port of the bridge.
// Loopback, made with the namespace, keeps ::1. A kernel without IPv6 has
// nothing to turn off.
func disableIPv6(iface string) error {
	err := os.WriteFile("/proc/sys/net/ipv6/conf/"+iface+"/disable_ipv6", []byte("1\n"), 0o644)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disabling IPv6 on %s: %w", iface, err)
	}
	return nil
}

// enableIPv6 turns IPv6 on on the interface iface of the calling
// thread's namespace: an IPv6 network's bridge, whose namespace's
// default may be off.
func enableIPv6(iface string) error {
	err := os.WriteFile("/proc/sys/net/ipv6/conf/"+iface+"/disable_ipv6", []byte("0\n"), 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("IPv6 network on %s: the kernel has no IPv6", iface)
	}
	if err != nil {
		return fmt.Errorf("enabling IPv6 on %s: %w", iface, err)
	}
	return nil
}

// ipv6Inside readies the interface iface of a container's namespace (the
// calling thread's) for its IPv6 address: IPv6 on (the namespace's
// default is off, see disableIPv6, and "all" may be off too, by a sysctl
// the namespace inherited), and no duplicate address detection, so that
// its link-local address, like the global one added without it, is
// usable the moment the container starts: a process that binds or
// connects at once would otherwise fail while the address is tentative.
// Set before the interface is up, when its link-local address is made.
func ipv6Inside(iface string) error {
	const conf = "/proc/sys/net/ipv6/conf/"
	if _, err := os.Stat(conf + "all"); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("IPv6 address on %s: the kernel has no IPv6", iface)
	}
	if err := allowIPv6(conf); err != nil {
		return err
	}
	for _, kv := range [][2]string{{iface + "/accept_dad", "0"}, {iface + "/disable_ipv6", "0"}} {
		if err := os.WriteFile(conf+kv[0], []byte(kv[1]+"\n"), 0o644); err != nil {
			return fmt.Errorf("net.ipv6.conf.%s=%s: %w", strings.ReplaceAll(kv[0], "/", "."), kv[1], err)
		}
	}
	return nil
}

// allowIPv6 turns "all"'s disable_ipv6 off when it is on. Writing "all"
// sets every interface alike, so the interfaces that had IPv6 off (those
// of IPv4-only networks) get it back off.
func allowIPv6(conf string) error {
	b, err := os.ReadFile(conf + "all/disable_ipv6")
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != "1" {
		return nil
	}
	des, err := os.ReadDir(conf)
	if err != nil {
		return err
	}
	var off []string
	for _, de := range des {
		name := de.Name()
		if name == "all" || name == "default" || name == "lo" {
			continue
		}
		if v, err := os.ReadFile(conf + name + "/disable_ipv6"); err == nil && strings.TrimSpace(string(v)) == "1" {
			off = append(off, name)
		}
	}
	if err := os.WriteFile(conf+"all/disable_ipv6", []byte("0\n"), 0o644); err != nil {
		return fmt.Errorf("net.ipv6.conf.all.disable_ipv6=0: %w", err)
	}
	for _, name := range off {
		if err := disableIPv6(name); err != nil {
			return err
		}
	}
	return nil
}

// ifaceSysctls sets the sysctls of interface iface of the calling
// thread's namespace: each net.X.Y.IFNAME.Z=value (checked by the engine)
// is /proc/sys/net/X/Y/<iface>/Z. A value already set is not written, as
// Docker does, for a read-only /proc/sys/net.
func ifaceSysctls(iface string, sysctls []string) error {
	for _, sc := range sysctls {
		k, v, _ := strings.Cut(sc, "=")
		sk := strings.Split(k, ".")
		if len(sk) != 5 {
			return fmt.Errorf("expected sysctl '%s' to have format net.X.Y.IFNAME.Z", sc)
		}
		p := filepath.Join("/proc/sys", sk[0], sk[1], sk[2], iface, sk[4])
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a sysctl file: %w", p, errdefs.ErrInvalidArgument)
		}
		cur, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("unable to read '%s': %w", p, err)
		}
		if strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			return fmt.Errorf("unable to write to '%s': %w", p, err)
		}
	}
	return nil
}

// inNS runs fn on the calling namespace thread moved into the namespace
// sb, and brings the thread back to the detached namespace: /proc/sys/net
// is the namespace of the thread that opens it, and a sysctl has no
// netlink equivalent to set it from outside.
func (d *Driver) inNS(sb netns.NsHandle, fn func() error) error {
	if err := unix.Setns(int(sb), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering the container's network namespace: %w", err)
	}
	return errors.Join(fn(), d.ns.back())
}

// loopbackUp brings lo up in the calling thread's namespace.
func loopbackUp() error {
	h, err := netlink.NewHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	return h.LinkSetUp(lo)
}

// RemoveSandbox implements engine/network.Driver. The namespace itself
// goes when its last user (the container's processes) is gone.
func (d *Driver) RemoveSandbox(ctx context.Context, id string) error {
	if !validID(id) {
		return fmt.Errorf("invalid container ID %q", id)
	}
	path := filepath.Join(d.o.SandboxDir, id)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Sandboxes implements engine/network.Driver.
func (d *Driver) Sandboxes(ctx context.Context) ([]string, error) {
	des, err := os.ReadDir(d.o.SandboxDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, de := range des {
		if validID(de.Name()) {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// SandboxLive implements engine/network.Driver: the path is still a bind
// mount of a namespace (nsfs), not the bare file a mount namespace that
// ended with an earlier daemon left.
func (d *Driver) SandboxLive(ctx context.Context, id string) bool {
	if !validID(id) {
		return false
	}
	var st unix.Statfs_t
	return unix.Statfs(filepath.Join(d.o.SandboxDir, id), &st) == nil && st.Type == unix.NSFS_MAGIC
}

// validID accepts container IDs (64 lowercase hex characters) only, so
// that no name can reach outside SandboxDir.
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
