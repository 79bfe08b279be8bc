package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
)

// checkTun checks that slirp4netns will be able to create its tap device:
// it opens /dev/net/tun from inside the user namespace, where the device
// node's root owner is unmapped, so the node must be open to everybody.
func checkTun(_ context.Context, env *Env) []Item {
	it := Item{Check: CheckTun, Name: "/dev/net/tun"}
	if env.Rootful {
		it.Detail = rootNotNeeded
		return []Item{it}
	}
	err := openRW(env.TunDevice)
	switch {
	case err == nil:
		it.Detail = "readable and writable"
		return []Item{it}
	case errors.Is(err, fs.ErrNotExist):
		it.Fix = "run as root: modprobe tun (if " + env.TunDevice + " is still missing: mkdir -p /dev/net && mknod -m 666 /dev/net/tun c 10 200)"
	case errors.Is(err, fs.ErrPermission):
		it.Fix = "run as root: chmod 666 " + env.TunDevice
	default:
		it.Fix = "run as root: modprobe tun && chmod 666 " + env.TunDevice
	}
	it.Status = Missing
	it.Detail = fmt.Sprintf("%v: slirp4netns cannot serve the containers' network, so %s", err, noNetwork)
	return []Item{it}
}

// checkSlirp finds slirp4netns and reports its version.
func checkSlirp(ctx context.Context, env *Env) []Item {
	it := Item{Check: CheckSlirp, Name: "slirp4netns"}
	if env.Rootful {
		it.Detail = rootNotNeeded
		return []Item{it}
	}
	path, err := env.LookPath("slirp4netns")
	if err != nil {
		it.Status = Missing
		it.Detail = "not found on PATH: " + noNetwork
		it.Fix = "install it: apt-get install slirp4netns (Debian/Ubuntu), dnf install slirp4netns (Fedora/RHEL)"
		return []Item{it}
	}
	it.Detail = path
	if !env.Probe {
		return []Item{it}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		it.Status = Missing
		it.Detail = fmt.Sprintf("%s --version failed: %v: %s", path, err, noNetwork)
		it.Fix = "reinstall it: apt-get install --reinstall slirp4netns (Debian/Ubuntu), dnf reinstall slirp4netns (Fedora/RHEL)"
		return []Item{it}
	}
	it.Detail = fmt.Sprintf("%s (%s)", path, firstLine(string(out)))
	return []Item{it}
}
