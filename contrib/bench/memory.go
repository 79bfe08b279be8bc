package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// settle is how long memory is left to settle before it is read: the
// shims and the Go runtime return start-up garbage within about a second.
const settle = 3 * time.Second

// Memory is the memory figure: the daemon's process tree idle and with
// sleeping containers, shims counted apart.
type Memory struct {
	Idle    MemSample   `json:"idle"`
	Loaded  []MemSample `json:"loaded"`
	PerCtr  []PerCtr    `json:"per_container"`
	Comment string      `json:"comment"`
}

// MemSample is one reading of the tree. KiB throughout.
type MemSample struct {
	Containers int       `json:"containers"`
	TreeRSS    int       `json:"tree_rss_kib"`
	TreePSS    int       `json:"tree_pss_kib"`
	Shims      int       `json:"shims"`
	ShimRSS    int       `json:"shims_rss_kib"`
	ShimPSS    int       `json:"shims_pss_kib"`
	Procs      []ProcMem `json:"tree"`
}

// ProcMem is one process of the tree.
type ProcMem struct {
	Pid  int    `json:"pid"`
	Name string `json:"name"`
	RSS  int    `json:"rss_kib"`
	PSS  int    `json:"pss_kib"`
}

// PerCtr is the overhead per container at N containers: (tree + shims at
// N − tree + shims idle) / N.
type PerCtr struct {
	Containers int `json:"containers"`
	RSS        int `json:"rss_kib"`
	PSS        int `json:"pss_kib"`
	// ShimRSS and ShimPSS are the shims alone, per shim.
	ShimRSS int `json:"shim_rss_kib"`
	ShimPSS int `json:"shim_pss_kib"`
}

// benchMemory restarts the daemon on its storage (the busybox image
// stays), reads the idle tree, then the tree with sleeping containers.
func benchMemory(ctx context.Context, e *env, res *Results) error {
	if err := e.stopDaemon(); err != nil {
		return err
	}
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	defer e.stopDaemon()
	m := &res.Memory
	m.Comment = "tree: the engine (the daemon's own process, live restore being the default), the keeper it started (hutch-ns keeper, rootlesskit's parent, and its namespace child, hutch-keeper), slirp4netns and the hutch-runtime a warm shim keeps ready; shims apart; containers' own processes not counted"
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	if m.Idle, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	var ids []string
	defer func() {
		for _, id := range ids {
			d.api.ContainerRemove(context.WithoutCancel(ctx), id, client.ContainerRemoveOptions{Force: true})
		}
	}()
	for _, n := range e.cfg.sleepers {
		for len(ids) < n {
			id, err := startSleeper(ctx, d.api, e.busybox)
			if err != nil {
				return fmt.Errorf("container %d: %w (daemon log %s)", len(ids)+1, err, d.logPath)
			}
			ids = append(ids, id)
		}
		if err := sleep(ctx, settle); err != nil {
			return err
		}
		s, err := readTree(d.cmd.Process.Pid)
		if err != nil {
			return err
		}
		s.Containers = n
		if s.Shims != n {
			progress("   %d shims found for %d containers", s.Shims, n)
		}
		m.Loaded = append(m.Loaded, s)
		pc := PerCtr{
			Containers: n,
			RSS:        (s.TreeRSS + s.ShimRSS - m.Idle.TreeRSS - m.Idle.ShimRSS) / n,
			PSS:        (s.TreePSS + s.ShimPSS - m.Idle.TreePSS - m.Idle.ShimPSS) / n,
		}
		if s.Shims > 0 {
			pc.ShimRSS, pc.ShimPSS = s.ShimRSS/s.Shims, s.ShimPSS/s.Shims
		}
		m.PerCtr = append(m.PerCtr, pc)
	}
	return nil
}

func startSleeper(ctx context.Context, api *client.Client, ref string) (string, error) {
	created, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Cmd: []string{"sleep", "300"}},
	})
	if err != nil {
		return "", err
	}
	if _, err := api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return created.ID, err
	}
	return created.ID, nil
}

// readTree sums the memory of root and its descendants. A hutch-shim is
// counted apart, and what runs under it (the container) not at all, except
// a hutch-runtime waiting for a request (a warm shim's): that is the
// daemon's, and counts in the tree.
//
// With live restore the daemon's namespaces belong to a keeper that an
// earlier daemon may have started: the keeper's tree (hutch-ns keeper,
// its namespace child hutch-keeper, slirp4netns) counts as the daemon's wherever it
// hangs.
func readTree(root int) (MemSample, error) {
	children, err := childMap()
	if err != nil {
		return MemSample{}, err
	}
	var s MemSample
	queue := append([]int{root}, keepers(children, root)...)
	seen := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		name := procName(pid)
		rss, pss, err := smapsRollup(pid)
		if err != nil {
			if os.IsNotExist(err) {
				continue // gone meanwhile
			}
			return MemSample{}, err
		}
		if name == "hutch-shim" {
			s.Shims++
			s.ShimRSS += rss
			s.ShimPSS += pss
			for _, c := range children[pid] {
				if procName(c) == "hutch-runtime" && !strings.Contains(cmdline(c), "\x00init") {
					queue = append(queue, c)
				}
			}
			continue
		}
		s.TreeRSS += rss
		s.TreePSS += pss
		s.Procs = append(s.Procs, ProcMem{Pid: pid, Name: name, RSS: rss, PSS: pss})
		queue = append(queue, children[pid]...)
	}
	return s, nil
}

// keepers are the live-restore keepers (`hutch-ns keeper` whose parent is
// not one) of root's user, outside root's tree.
func keepers(children map[int][]int, root int) []int {
	uid := ownerOf(root)
	parent := map[int]int{}
	for p, cs := range children {
		for _, c := range cs {
			parent[c] = p
		}
	}
	isKeeper := func(pid int) bool {
		args := strings.Split(cmdline(pid), "\x00")
		return len(args) > 1 && filepath.Base(args[0]) == "hutch-ns" && args[1] == "keeper"
	}
	var out []int
	for pid := range parent {
		if !isKeeper(pid) || isKeeper(parent[pid]) || ownerOf(pid) != uid {
			continue
		}
		under := false
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				under = true
				break
			}
		}
		if !under {
			out = append(out, pid)
		}
	}
	return out
}

// ownerOf is the real uid of pid ("" when it cannot be read).
func ownerOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// childMap reads every process's parent from /proc.
func childMap() (map[int][]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	m := map[int][]int{}
	for _, de := range ents {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		m[ppid] = append(m[ppid], pid)
	}
	return m, nil
}

// statFields are the fields of a /proc/PID/stat line after pid and comm
// (state, ppid, …): comm may hold spaces and parentheses.
func statFields(b []byte) []string {
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// cmdline is the raw command line of pid.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

// procName is the base name of argv[0] (the comm of a re-executed
// /proc/self/exe would say "exe").
func procName(pid int) string {
	b := cmdline(pid)
	if b == "" {
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(c))
	}
	argv0, _, _ := strings.Cut(b, "\x00")
	return filepath.Base(argv0)
}

// smapsRollup reads Rss and Pss (KiB) of a process.
func smapsRollup(pid int) (rss, pss int, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "Rss":
			rss = n
		case "Pss":
			pss = n
		}
	}
	return rss, pss, sc.Err()
}
