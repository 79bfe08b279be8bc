package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUUse is where the machine's CPU time went during the burst of the
// concurrency figure, in ms summed over the CPUs. The p99 ratio rests on
// it: while ten clients keep every CPU busy, the mean latency is their
// share of the CPUs, so a run whose hutch took more CPU per container, or
// whose machine gave time to something else (a process of another user,
// the hypervisor: steal), has a higher ratio though hutch did not change.
type CPUUse struct {
	// Hutch is the daemon's process tree: engine, rootlesskit's parent,
	// slirp4netns, shims, hutch-runtime, the containers' inits and
	// commands (each process's own time and that of the children it
	// reaped).
	Hutch float64 `json:"hutch_ms"`
	// Clients is this program's (the ten clients').
	Clients float64 `json:"clients_ms"`
	// Other is the rest of the busy time: the kernel's threads, other
	// processes.
	Other float64 `json:"other_ms"`
	Idle  float64 `json:"idle_ms"`
	Steal float64 `json:"steal_ms"`
}

// cpuSnap is one reading of the counters CPUUse is the difference of.
type cpuSnap struct {
	busy, idle, steal float64 // /proc/stat, all CPUs
	tree              float64
	self              float64
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on Linux.
const clockTick = 10 * time.Millisecond

func readCPU(root int) (cpuSnap, error) {
	var s cpuSnap
	var err error
	if s.busy, s.idle, s.steal, err = readStat(); err != nil {
		return s, err
	}
	if s.tree, err = treeCPU(root); err != nil {
		return s, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return s, err
	}
	s.self = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
	return s, nil
}

// readStat reads the machine's CPU times, summed over the CPUs, from the
// first line of /proc/stat.
func readStat() (busy, idle, steal float64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	// user nice system idle iowait irq softirq steal
	var v [8]float64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		v[i] = ticksMs(n)
	}
	return v[0] + v[1] + v[2] + v[5] + v[6], v[3] + v[4], v[7], nil
}

// use is what happened between a and b. The clients' time is counted in
// the busy time too, so it is taken out of the rest.
func (a cpuSnap) use(b cpuSnap) CPUUse {
	u := CPUUse{
		Hutch:   round3(b.tree - a.tree),
		Clients: round3(b.self - a.self),
		Idle:    round3(b.idle - a.idle),
		Steal:   round3(b.steal - a.steal),
	}
	u.Other = round3(max(0, (b.busy-a.busy)-u.Hutch-u.Clients))
	return u
}

// treeCPU sums utime, stime, cutime and cstime of root and its
// descendants: a process that exited in between is counted in its
// reaper's cutime, once.
func treeCPU(root int) (float64, error) {
	children, err := childMap()
	if err != nil {
		return 0, err
	}
	var total float64
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = append(queue[1:], children[pid]...)
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile: its reaper has its time
		}
		ms, err := statCPU(b)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		total += ms
	}
	return total, nil
}

// statCPU reads fields 14-17 (utime stime cutime cstime) of a
// /proc/PID/stat line, whose comm may hold spaces and parentheses.
func statCPU(b []byte) (float64, error) {
	if bytes.LastIndexByte(b, ')') < 0 {
		return 0, fmt.Errorf("no comm")
	}
	f := statFields(b)
	// f[0] is field 3 (state): utime is field 14.
	if len(f) < 15 {
		return 0, fmt.Errorf("%d fields after comm", len(f))
	}
	var total float64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		total += ticksMs(uint64(max(n, 0)))
	}
	return total, nil
}

func ticksMs(n uint64) float64 {
	return float64(n) * float64(clockTick) / float64(time.Millisecond)
}

// plus is the sum of two spans' uses.
func (u CPUUse) plus(v CPUUse) CPUUse {
	return CPUUse{
		Hutch:   round3(u.Hutch + v.Hutch),
		Clients: round3(u.Clients + v.Clients),
		Other:   round3(u.Other + v.Other),
		Idle:    round3(u.Idle + v.Idle),
		Steal:   round3(u.Steal + v.Steal),
	}
}
