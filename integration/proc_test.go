//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// children lists the pids whose parent is pid.
func children(t testing.TB, pid int) []int {
	t.Helper()
	var out []int
	for _, p := range procstat.Children(pid) {
		out = append(out, p.PID)
	}
	return out
}

// parentOf is the parent pid of pid, 0 if it is gone.
func parentOf(pid int) int {
	_, f, ok := procstat.Read(strconv.Itoa(pid))
	if !ok {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// descendants lists every process below pid.
func descendants(t testing.TB, pid int) []int {
	var all []int
	for _, c := range children(t, pid) {
		all = append(all, c)
		all = append(all, descendants(t, c)...)
	}
	return all
}

func readProc(t testing.TB, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), name))
	if err != nil {
		t.Fatalf("read /proc/%d/%s: %v", pid, name, err)
	}
	return string(b)
}

// exeName is the base name of the program pid runs.
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func itoa(i int) string { return strconv.Itoa(i) }
