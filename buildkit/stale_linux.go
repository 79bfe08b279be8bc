package buildkit

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// cleanStale removes what a hutch-buildkit killed mid-build left: build
// containers still running (their processes outlive it: the runtime
// server that made them waits for them) and the bundles whose rootfs is
// still mounted in the engine's mount namespace. BuildKit's own stores
// are crash-safe, and its leases of an unfinished build expire.
func cleanStale(bundles, stateDir string, log *slog.Logger) {
	entries, _ := os.ReadDir(stateDir)
	for _, e := range entries {
		dir := filepath.Join(stateDir, e.Name())
		if pid, ok := staleInit(dir); ok {
			log.Info("killing a build container left by an earlier run", "id", e.Name(), "pid", pid)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		_ = os.RemoveAll(dir)
	}
	entries, _ = os.ReadDir(bundles)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(bundles, e.Name())
		removeBundle(dir, log)
	}
}

// removeBundle removes a build container's bundle once nothing is
// mounted under it: a removal through a rootfs still mounted would delete
// the snapshot's files (with the native snapshotter, the rootfs is a bind
// of the snapshot itself). One that stays is cleaned at the next start.
func removeBundle(dir string, log *slog.Logger) {
	if mountedUnder(dir) {
		_ = unix.Unmount(filepath.Join(dir, "rootfs"), unix.MNT_DETACH)
		if mountedUnder(dir) {
			log.Warn("a build bundle stays: something under it is still mounted", "dir", dir)
			return
		}
	}
	_ = os.RemoveAll(dir)
}

// staleInit reads the init of a libcontainer state directory, and
// whether that process still runs (the same pid and start time).
func staleInit(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return 0, false
	}
	var st struct {
		Pid   int    `json:"init_process_pid"`
		Start uint64 `json:"init_process_start"`
	}
	if json.Unmarshal(b, &st) != nil || st.Pid <= 0 {
		return 0, false
	}
	start, ok := procStart(st.Pid)
	return st.Pid, ok && start == st.Start
}

// procStart is the start time (ticks) of process pid: field 22 of its
// stat, the 20th after the command's name.
func procStart(pid int) (uint64, bool) {
	_, f, ok := procstat.Read(strconv.Itoa(pid))
	if !ok || len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// mountedUnder reports whether a mount point lies at or under dir.
func mountedUnder(dir string) bool {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	return err != nil || len(ms) > 0
}
