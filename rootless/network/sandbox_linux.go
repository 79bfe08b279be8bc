package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
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
