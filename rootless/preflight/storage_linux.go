package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// checkStorage reports the storage driver the daemon will end up with: it
// probes native overlay, then fuse-overlayfs, then falls back to vfs
// (docs/design.md, Storage and images).
func checkStorage(ctx context.Context, env *Env) []Item {
	it := Item{Check: CheckStorage, Name: "storage driver"}
	kernel := env.Kernel
	if kernel == "" {
		kernel = "unknown"
	}
	var why string
	switch {
	case env.Probe:
		dir, err := probeOverlay(ctx, env)
		if err == nil {
			it.Detail = fmt.Sprintf("overlay (native overlay mounts in a user namespace, kernel %s)", kernel)
			return []Item{it}
		}
		why = fmt.Sprintf("native overlay failed in a user namespace on kernel %s in %s: %v", kernel, dir, err)
	case kernelAtLeast(env.Kernel, 5, 11):
		it.Detail = fmt.Sprintf("overlay (kernel %s mounts overlay in a user namespace; not probed)", kernel)
		return []Item{it}
	case env.Kernel == "":
		why = "the kernel version is unknown"
	default:
		why = fmt.Sprintf("kernel %s is older than 5.11, which mounts overlay in a user namespace", kernel)
	}

	fuse, lookErr := env.LookPath("fuse-overlayfs")
	var devErr error
	if lookErr == nil {
		if devErr = openRW(env.FuseDevice); devErr == nil {
			it.Detail = fmt.Sprintf("fuse-overlayfs (%s), since %s", fuse, why)
			return []Item{it}
		}
	}
	it.Status = Warning
	it.Detail = "vfs, which copies every layer in full (slow pulls and container creation, much disk), since " + why
	switch {
	case lookErr != nil:
		it.Detail += ", and fuse-overlayfs is not on PATH"
		it.Fix = "install fuse-overlayfs: apt-get install fuse-overlayfs (Debian/Ubuntu), dnf install fuse-overlayfs (Fedora/RHEL)"
	case errors.Is(devErr, fs.ErrNotExist):
		it.Detail += fmt.Sprintf(", and %s does not exist", env.FuseDevice)
		it.Fix = "run as root: modprobe fuse"
	default:
		it.Detail += fmt.Sprintf(", and fuse-overlayfs cannot use %s: %v", env.FuseDevice, devErr)
		it.Fix = "run as root: chmod 666 " + env.FuseDevice
	}
	return []Item{it}
}

// probeOverlay mounts an overlay as the storage driver will (user namespace,
// userxattr) on the file system of the data directory, and removes what it
// made. The mount dies with the child's mount namespace. It returns the
// directory it probed in.
func probeOverlay(ctx context.Context, env *Env) (string, error) {
	mount, err := env.LookPath("mount")
	if err != nil {
		return "", fmt.Errorf("no mount(8) to probe with: %w", err)
	}
	parent := existingParent(env.DataDir)
	base, err := os.MkdirTemp(parent, ".hutch-probe-")
	if err != nil {
		parent = env.TmpDir
		if base, err = os.MkdirTemp(parent, ".hutch-probe-"); err != nil {
			return parent, err
		}
	}
	defer os.RemoveAll(base)
	for _, d := range []string{"l", "u", "w", "m"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			return parent, err
		}
	}
	// Relative paths: a comma or colon in base would split the options.
	return parent, runInUserNS(ctx, syscall.CLONE_NEWNS, base, mount, "-n", "-t", "overlay", "overlay",
		"-o", "userxattr,lowerdir=l,upperdir=u,workdir=w", "m")
}

// existingParent is dir or its nearest ancestor that exists.
func existingParent(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	for {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return dir
		}
		dir = up
	}
}

// kernelAtLeast compares a release such as "6.8.0-45-generic" with
// major.minor; an unparsable release is not at least anything.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(leadingDigits(parts[1]))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
