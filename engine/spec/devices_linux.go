package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// userDevice is one device node of --device, found on the host.
type userDevice struct {
	host, ctr    string // paths on the host and in the container
	typ          string // "c" or "b"
	major, minor int64
	access       string // cgroup permissions, a subset of "rwm"
}

// userDevices resolves HostConfig.Devices (--device
// host[:container[:rwm]]) as Docker does: a device node, or every device
// node under a directory, at the same place under the container path.
//
// They are bound from the host, not made with mknod: a user namespace
// cannot make device nodes (rootless Docker and Podman bind them too).
// Each gets a rule of the device cgroup, which the runtime applies where
// the host enforces it (elsewhere a rule narrower than rwm is warned of).
func (b *builder) userDevices() ([]userDevice, error) {
	var out []userDevice
	for _, d := range b.hc.Resources.Devices {
		access := d.CgroupPermissions
		if access == "" {
			access = "rwm"
		}
		if strings.Trim(access, "rwm") != "" || len(access) > 3 {
			return nil, fmt.Errorf("invalid device mode: %s: %w", d.CgroupPermissions, errdefs.ErrInvalidArgument)
		}
		ctr := d.PathInContainer
		if ctr == "" {
			ctr = d.PathOnHost
		}
		if err := checkTarget(ctr); err != nil {
			return nil, fmt.Errorf("invalid device path in the container %q: %w: %w", ctr, err, errdefs.ErrInvalidArgument)
		}
		gathering := func(err error) error {
			return fmt.Errorf("error gathering device information while adding custom device %q: %w: %w", d.PathOnHost, err, errdefs.ErrInvalidArgument)
		}
		host, err := filepath.EvalSymlinks(d.PathOnHost)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, gathering(err)
		}
		if dev, ok, err := deviceAt(host); err != nil {
			return nil, gathering(err)
		} else if ok {
			dev.ctr, dev.access = path.Clean(ctr), access
			out = append(out, dev)
			continue
		}
		found := 0
		err = filepath.WalkDir(host, func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || de.Type()&fs.ModeDevice == 0 {
				return nil // unreadable parts are skipped, as Docker does
			}
			dev, ok, err := deviceAt(p)
			if err != nil || !ok {
				return nil
			}
			rel, _ := filepath.Rel(host, p)
			dev.ctr, dev.access = path.Join(ctr, filepath.ToSlash(rel)), access
			out = append(out, dev)
			found++
			return nil
		})
		if err != nil {
			return nil, gathering(err)
		}
		if found == 0 {
			return nil, gathering(errors.New("not a device node"))
		}
	}
	return out, nil
}

// deviceAt is the device node at p; ok is false for anything else.
func deviceAt(p string) (dev userDevice, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return dev, false, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		dev.typ = "c"
	case unix.S_IFBLK:
		dev.typ = "b"
	default:
		return dev, false, nil
	}
	dev.host = p
	dev.major, dev.minor = int64(unix.Major(uint64(st.Rdev))), int64(unix.Minor(uint64(st.Rdev)))
	return dev, true, nil
}

// mount binds the device node at its place in the container. A
// read-only mount would not keep writes out (the kernel checks a device
// node's mount for nodev only): the device cgroup rule does, where the
// host enforces it.
func (d userDevice) mount() specs.Mount {
	return specs.Mount{Destination: d.ctr, Type: "bind", Source: d.host, Options: []string{"bind", "rprivate"}}
}

// rule allows the device in the device cgroup.
func (d userDevice) rule() specs.LinuxDeviceCgroup {
	return specs.LinuxDeviceCgroup{Allow: true, Type: d.typ, Major: ptr(d.major), Minor: ptr(d.minor), Access: d.access}
}

// ParseDeviceRule reads a --device-cgroup-rule as Docker does:
// "type major:minor access", type a, b or c, "*" for any number, access a
// subset of rwm.
func ParseDeviceRule(raw string) (specs.LinuxDeviceCgroup, error) {
	invalid := fmt.Errorf("invalid device cgroup format '%s': %w", raw, errdefs.ErrInvalidArgument)
	f := strings.Fields(raw)
	if len(f) != 3 || (f[0] != "a" && f[0] != "b" && f[0] != "c") || f[2] == "" || strings.Trim(f[2], "rwm") != "" {
		return specs.LinuxDeviceCgroup{}, invalid
	}
	majStr, minStr, ok := strings.Cut(f[1], ":")
	if !ok {
		return specs.LinuxDeviceCgroup{}, invalid
	}
	num := func(s string) (*int64, bool) {
		if s == "*" {
			return nil, true
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return &n, err == nil && n >= 0
	}
	major, ok1 := num(majStr)
	minor, ok2 := num(minStr)
	if !ok1 || !ok2 {
		return specs.LinuxDeviceCgroup{}, invalid
	}
	return specs.LinuxDeviceCgroup{Allow: true, Type: f[0], Major: major, Minor: minor, Access: f[2]}, nil
}
