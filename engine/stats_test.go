package engine

import (
	"os"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
)

// procStats of this test's process (and its descendants: our pid
// namespace is the host's) counts its CPU, memory and threads.
func TestProcStats(t *testing.T) {
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = 1
	}
	var s containertypes.StatsResponse
	procStats(os.Getpid(), false, &s)
	u := s.CPUStats.CPUUsage
	if u.TotalUsage == 0 || u.TotalUsage != u.UsageInUsermode+u.UsageInKernelmode || s.CPUStats.SystemUsage < u.TotalUsage || s.CPUStats.OnlineCPUs == 0 {
		t.Errorf("cpu stats %+v", s.CPUStats)
	}
	if s.MemoryStats.Usage < 8<<20 || s.MemoryStats.Limit < s.MemoryStats.Usage {
		t.Errorf("memory stats %+v, want at least the 8 MiB written", s.MemoryStats)
	}
	if s.PidsStats.Current < 1 {
		t.Errorf("pids %+v", s.PidsStats)
	}
	if io := s.BlkioStats.IoServiceBytesRecursive; len(io) != 2 || io[0].Op != "read" || io[1].Op != "write" {
		t.Errorf("blkio %+v", io)
	}
	if _, lo := s.Networks["lo"]; lo {
		t.Errorf("networks include lo: %v", s.Networks)
	}
	_ = buf[len(buf)-1]
}

// A stream's totals never go down, though a process that ends takes its
// times with it.
func TestKeepRising(t *testing.T) {
	prev := containertypes.StatsResponse{CPUStats: containertypes.CPUStats{CPUUsage: containertypes.CPUUsage{TotalUsage: 10, UsageInUsermode: 7, UsageInKernelmode: 3}}}
	prev.BlkioStats.IoServiceBytesRecursive = []containertypes.BlkioStatEntry{{Op: "read", Value: 5}, {Op: "write", Value: 6}}
	s := containertypes.StatsResponse{CPUStats: containertypes.CPUStats{CPUUsage: containertypes.CPUUsage{TotalUsage: 8, UsageInUsermode: 8}}}
	s.BlkioStats.IoServiceBytesRecursive = []containertypes.BlkioStatEntry{{Op: "read", Value: 1}, {Op: "write", Value: 9}}
	keepRising(&s, prev)
	if u := s.CPUStats.CPUUsage; u.TotalUsage != 10 || u.UsageInUsermode != 8 || u.UsageInKernelmode != 3 {
		t.Errorf("cpu %+v", u)
	}
	if io := s.BlkioStats.IoServiceBytesRecursive; io[0].Value != 5 || io[1].Value != 9 {
		t.Errorf("blkio %+v", io)
	}
}
