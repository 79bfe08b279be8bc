package buildkit

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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

// procStart is field 22 of /proc/pid/stat: the start time in ticks.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command (field 2) may hold spaces; the rest follows its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// mountedUnder reports whether a mount point lies under dir.
func mountedUnder(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return true
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			return true
		}
	}
	return false
}
