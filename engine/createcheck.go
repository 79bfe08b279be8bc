package engine

import (
	"fmt"
	"path"
	"runtime"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

// defaultRuntime is the one OCI runtime hutch has, under the name Docker
// gives its default: inspect's HostConfig.Runtime and /info say "runc".
const defaultRuntime = "runc"

// maxHostnameLen is the kernel's limit on a UTS hostname.
const maxHostnameLen = 64

// checkCreate refuses, at create and before anything is made, what
// Docker's create refuses in a request's config and host config on its
// own, with Docker's words (its verifyContainerSettings and runconfig
// checks): each as a bad parameter (400). What needs other records (links,
// --volumes-from, shared namespaces) is checked apart.
func checkCreate(cfg *containertypes.Config, hc *containertypes.HostConfig) error {
	for _, kv := range cfg.Env {
		if k, _, _ := strings.Cut(kv, "="); k == "" {
			return invalidArg("invalid environment variable: " + kv)
		}
	}
	if len(cfg.Hostname) > maxHostnameLen {
		return invalidArg(fmt.Sprintf("hostname %q is too long (maximum %d bytes)", cfg.Hostname, maxHostnameLen))
	}
	for k := range hc.Annotations {
		if k == "" {
			return invalidArg("invalid Annotations: the empty string is not permitted as an annotation key")
		}
	}
	if err := checkResources(hc.Resources); err != nil {
		return err
	}
	switch {
	case !hc.IpcMode.Valid():
		return invalidArg(fmt.Sprintf("invalid IPC mode: %v", hc.IpcMode))
	case !hc.PidMode.Valid():
		return invalidArg(fmt.Sprintf("invalid PID mode: %v", hc.PidMode))
	case hc.ShmSize < 0:
		return invalidArg("SHM size can not be less than 0")
	case !hc.UTSMode.Valid():
		return invalidArg(fmt.Sprintf("invalid UTS mode: %v", hc.UTSMode))
	case hc.OomScoreAdj < -1000 || hc.OomScoreAdj > 1000:
		return invalidArg(fmt.Sprintf("Invalid value %d, range for oom score adj is [-1000, 1000]", hc.OomScoreAdj))
	case hc.Runtime != "" && hc.Runtime != defaultRuntime:
		return invalidArg("unknown or invalid runtime name: " + hc.Runtime)
	case !hc.CgroupnsMode.Valid():
		return invalidArg(fmt.Sprintf("invalid cgroup namespace mode: %v", hc.CgroupnsMode))
	}
	for dst := range hc.Tmpfs {
		if err := checkTmpfsTarget(dst); err != nil {
			return err
		}
	}
	return nil
}

// checkResources checks the limits as Docker does before it looks at what
// the host supports: the host's lack of a controller is a warning
// (createWarnings), a value out of range an error.
func checkResources(r containertypes.Resources) error {
	if r.CPUShares < 0 {
		return invalidArg(fmt.Sprintf("invalid CPU shares (%d): value must be a positive integer", r.CPUShares))
	}
	if r.Memory != 0 && r.Memory < minMemory {
		return invalidArg("Minimum memory limit allowed is 6MB")
	}
	if r.Memory > 0 && r.MemorySwap > 0 && r.MemorySwap < r.Memory {
		return invalidArg("Minimum memoryswap limit should be larger than memory limit, see usage")
	}
	if r.Memory == 0 && r.MemorySwap > 0 {
		return invalidArg("You should always set the Memory limit when using Memoryswap limit, see usage")
	}
	// -1 is the CLI's "unset" (Docker's fixMemorySwappiness).
	if s := r.MemorySwappiness; s != nil && *s != -1 && (*s < 0 || *s > 100) {
		return invalidArg(fmt.Sprintf("Invalid value: %v, valid memory swappiness range is 0-100", *s))
	}
	if r.MemoryReservation > 0 && r.MemoryReservation < minMemory {
		return invalidArg("Minimum memory reservation allowed is 6MB")
	}
	if r.Memory > 0 && r.MemoryReservation > 0 && r.Memory < r.MemoryReservation {
		return invalidArg("Minimum memory limit can not be less than memory reservation limit, see usage")
	}
	if r.NanoCPUs > 0 && r.CPUPeriod > 0 {
		return invalidArg("Conflicting options: Nano CPUs and CPU Period cannot both be set")
	}
	if r.NanoCPUs > 0 && r.CPUQuota > 0 {
		return invalidArg("Conflicting options: Nano CPUs and CPU Quota cannot both be set")
	}
	if nc := runtime.NumCPU(); r.NanoCPUs < 0 || r.NanoCPUs > int64(nc)*1e9 {
		return invalidArg(fmt.Sprintf("range of CPUs is from 0.01 to %[1]d.00, as there are only %[1]d CPUs available", nc))
	}
	if r.CPUPeriod != 0 && (r.CPUPeriod < 1000 || r.CPUPeriod > 1000000) {
		return invalidArg("CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)")
	}
	if r.CPUQuota > 0 && r.CPUQuota < 1000 {
		return invalidArg("CPU cfs quota can not be less than 1ms (i.e. 1000)")
	}
	if r.BlkioWeight > 0 && (r.BlkioWeight < 10 || r.BlkioWeight > 1000) {
		return invalidArg("Range of blkio weight is from 10 to 1000")
	}
	return nil
}

// checkTmpfsTarget checks a --tmpfs destination in Docker's words: not the
// root, and absolute.
func checkTmpfsTarget(dst string) error {
	p := strings.ReplaceAll(dst, `\`, "/")
	if path.Clean(p) == "/" {
		return invalidArg("invalid specification: destination can't be '/'")
	}
	if !path.IsAbs(p) {
		return invalidArg(fmt.Sprintf("invalid mount path: '%s' mount path must be absolute", p))
	}
	return nil
}

// fillCreateDefaults records in the host config what Docker fills in at
// create, so that inspect shows it: the daemon's IPC mode ("private"; API
// clients before 1.40 get "shareable" from the API server), the runtime,
// and for an unprivileged container the masked and read-only paths its
// start applies (an explicit list, even empty, stays).
func fillCreateDefaults(hc *containertypes.HostConfig, maskedPaths, readonlyPaths []string) {
	if hc.IpcMode.IsEmpty() {
		hc.IpcMode = containertypes.IPCModePrivate
	}
	if hc.Runtime == "" {
		hc.Runtime = defaultRuntime
	}
	if hc.Privileged {
		return
	}
	if hc.MaskedPaths == nil {
		hc.MaskedPaths = maskedPaths
	}
	if hc.ReadonlyPaths == nil {
		hc.ReadonlyPaths = readonlyPaths
	}
}

func invalidArg(msg string) error { return errdefs.ErrInvalidArgument.WithMessage(msg) }
