package engine

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// StatsRequest is GET /containers/{id}/stats.
type StatsRequest struct {
	// Stream sends a sample every second until the client goes.
	Stream bool
	// OneShot answers at once, without the second sample that gives
	// the CPU its rate (precpu_stats).
	OneShot bool
}

// statsInterval is how often a stream samples, as Docker's collector.
const statsInterval = time.Second

// ContainerStats answers GET /containers/{id}/stats (docker stats).
//
// Rootless on cgroup v1 a container has no cgroup of its own, so the
// figures come from /proc, summed over the processes of its pid
// namespace: CPU time (user and system, with what they reaped), resident
// memory not shared with files, threads, the bytes read and written, and
// the counters of its network interfaces. A process that ends takes its
// CPU time and I/O with it unless a process of the container reaps it; a
// stream never lets a total go down. A container that does not run has
// zeros, as on Docker.
func (e *Engine) ContainerStats(ctx context.Context, ref string, req StatsRequest, send func(containertypes.StatsResponse) error) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	sample := func() containertypes.StatsResponse {
		s := containertypes.StatsResponse{ID: c.ID, Name: "/" + strings.TrimPrefix(c.Name, "/"), OSType: "linux", Read: time.Now().UTC()}
		if client := e.runs.client(c.ID); client != nil {
			procStats(client.Pid(), sharesPIDs(c), &s)
			if c.HostConfig != nil && c.HostConfig.NetworkMode.IsHost() {
				s.Networks = nil // the host's, not the container's
			}
		}
		return s
	}
	wait := func() bool {
		t := time.NewTimer(statsInterval)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	prev := sample()
	if req.Stream || req.OneShot {
		// A stream's first sample goes at once, as a one-shot's only.
		if err := send(prev); err != nil || !req.Stream {
			return err
		}
	}
	for wait() {
		s := sample()
		keepRising(&s, prev)
		s.PreRead, s.PreCPUStats = prev.Read, prev.CPUStats
		if err := send(s); err != nil || !req.Stream {
			return err
		}
		prev = s
	}
	return nil
}

// keepRising keeps s's cumulative figures at least those of prev.
func keepRising(s *containertypes.StatsResponse, prev containertypes.StatsResponse) {
	u, p := &s.CPUStats.CPUUsage, prev.CPUStats.CPUUsage
	u.TotalUsage = max(u.TotalUsage, p.TotalUsage)
	u.UsageInUsermode = max(u.UsageInUsermode, p.UsageInUsermode)
	u.UsageInKernelmode = max(u.UsageInKernelmode, p.UsageInKernelmode)
	if a, b := s.BlkioStats.IoServiceBytesRecursive, prev.BlkioStats.IoServiceBytesRecursive; len(a) == len(b) {
		for i := range a {
			a[i].Value = max(a[i].Value, b[i].Value)
		}
	}
}

// ticks is the kernel's USER_HZ, in which /proc gives CPU times.
const ticks = 100

// procStats fills s from /proc for the container whose init is initPid.
func procStats(initPid int, shared bool, s *containertypes.StatsResponse) {
	pids, err := containerProcesses(initPid, shared)
	if err != nil {
		return
	}
	page := uint64(os.Getpagesize())
	var user, sys, threads, mem, rd, wr uint64
	for _, pid := range pids {
		f := statFields(pid)
		if len(f) < 18 {
			continue
		}
		// utime, stime, and the cutime and cstime of reaped children.
		user += num(f[11]) + num(f[13])
		sys += num(f[12]) + num(f[14])
		threads += num(f[17])
		if m, err := os.ReadFile(filepath.Join("/proc", pid, "statm")); err == nil {
			if fs := strings.Fields(string(m)); len(fs) >= 3 && num(fs[1]) >= num(fs[2]) {
				mem += (num(fs[1]) - num(fs[2])) * page
			}
		}
		io := keyed(filepath.Join("/proc", pid, "io"))
		rd += io["read_bytes"]
		wr += io["write_bytes"]
	}
	ns := func(t uint64) uint64 { return t * uint64(time.Second) / ticks }
	s.CPUStats = containertypes.CPUStats{
		CPUUsage:    containertypes.CPUUsage{TotalUsage: ns(user + sys), UsageInUsermode: ns(user), UsageInKernelmode: ns(sys)},
		SystemUsage: systemCPU(),
		OnlineCPUs:  uint32(runtime.NumCPU()),
	}
	s.MemoryStats = containertypes.MemoryStats{Usage: mem, Limit: uint64(max(memTotal(), 0))}
	s.PidsStats = containertypes.PidsStats{Current: threads}
	s.BlkioStats.IoServiceBytesRecursive = []containertypes.BlkioStatEntry{{Op: "read", Value: rd}, {Op: "write", Value: wr}}
	s.Networks = netStats(initPid)
}

// statFields are the fields of /proc/pid/stat after the command's name,
// from the state on.
func statFields(pid string) []string {
	_, f, _ := procstat.Read(pid)
	return f
}

func num(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// keyed reads a file of "key: value" lines (/proc/pid/io), the first
// number of each.
func keyed(path string) map[string]uint64 {
	out := map[string]uint64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if fs := strings.Fields(v); ok && len(fs) > 0 {
			out[k] = num(fs[0])
		}
	}
	return out
}

// systemCPU is the host's CPU time in nanoseconds, as Docker counts it:
// the sum of /proc/stat's cpu line.
func systemCPU() uint64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var t uint64
	for _, f := range strings.Fields(line)[1:] {
		t += num(f)
	}
	return t * uint64(time.Second) / ticks
}

// netStats are the counters of the interfaces (but lo) of initPid's
// network namespace.
func netStats(initPid int) map[string]containertypes.NetworkStats {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(initPid), "net", "dev"))
	if err != nil {
		return nil
	}
	out := map[string]containertypes.NetworkStats{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if !ok || name == "lo" || len(f) < 16 {
			continue
		}
		out[name] = containertypes.NetworkStats{
			RxBytes: num(f[0]), RxPackets: num(f[1]), RxErrors: num(f[2]), RxDropped: num(f[3]),
			TxBytes: num(f[8]), TxPackets: num(f[9]), TxErrors: num(f[10]), TxDropped: num(f[11]),
		}
	}
	return out
}
