package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// dockerRootlessMs is rootless Docker's `docker run --rm busybox true` on
// these machines (docs/design.md, Performance goals), a reference not measured here: Docker is not
// installed on them.
const dockerRootlessMs = 300

// Results is everything one run measured; it is latest.json.
type Results struct {
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Host     map[string]string `json:"host"`
	LoadAvg  map[string]string `json:"loadavg"`

	Seed       Dist        `json:"seed_flow"`
	SeedPhases []PhaseTime `json:"seed_flow_phases"`
	Runc       Dist        `json:"runc_run"`
	SeedRatio  float64     `json:"seed_over_runc_median"`
	// SeedUnconfined is the seed flow with seccomp=unconfined, measured
	// alternately with the default (filtered) one.
	SeedUnconfined   Dist    `json:"seed_flow_unconfined"`
	SeedSeccompRatio float64 `json:"seed_over_unconfined_median"`

	DockerRun Dist `json:"docker_run"`
	DockerCLI Dist `json:"docker_version"`

	Pull      Pull   `json:"pull"`
	Load      Load   `json:"concurrency"`
	Memory    Memory `json:"memory"`
	Idle      Idle   `json:"idle"`
	Net       Net    `json:"throughput"`
	ColdStart Dist   `json:"cold_start"`
	Stop      Dist   `json:"stop"`
	Build     Build  `json:"build"`
	Swarm     Swarm  `json:"swarm"`

	Targets []Target `json:"targets"`
}

// Target is one goal of docs/design.md (Performance goals) and whether this run meets it.
type Target struct {
	What   string `json:"what"`
	Value  string `json:"value"`
	Target string `json:"target"`
	Met    bool   `json:"met"`
}

func (r *Results) fillHost(c config) {
	r.Host = map[string]string{
		"cpus":   fmt.Sprint(runtime.NumCPU()),
		"kernel": readTrim("/proc/sys/kernel/osrelease"),
		"uid":    fmt.Sprint(os.Getuid()),
		"hutch":  firstLine(c.hutch, "version"),
		"runc":   firstLine(c.runc, "--version"),
		"docker": firstLine(c.docker, "--version"),
	}
}

// derive computes the summaries, ratios and verdicts.
func (r *Results) derive() {
	for _, d := range []*Dist{&r.Seed, &r.SeedUnconfined, &r.Runc, &r.DockerRun, &r.DockerCLI, &r.Pull.Hutch, &r.Pull.Baseline,
		&r.Load.Latency, &r.Load.Single, &r.ColdStart, &r.Stop, &r.Idle.Activation, &r.Swarm.Replace} {
		d.summarize()
	}
	r.Build.derive()
	r.SeedRatio = ratio(r.Seed.Median, r.Runc.Median)
	r.SeedSeccompRatio = ratio(r.Seed.Median, r.SeedUnconfined.Median)
	r.Pull.PairRatios = pairRatios(r.Pull.Hutch.Samples, r.Pull.Baseline.Samples)
	r.Pull.Ratio = median(r.Pull.PairRatios)
	r.Pull.MediansRatio = ratio(r.Pull.Hutch.Median, r.Pull.Baseline.Median)
	r.Load.P99Ratio = ratio(r.Load.Latency.P99, r.Load.Single.Median)
	r.Load.BurstRatios = r.Load.burstRatios()
	for _, rt := range []*Rate{&r.Net.Loopback, &r.Net.Published, &r.Net.PublishedReverse, &r.Net.Outbound} {
		rt.summarize()
	}
	r.Net.PublishedRatio = ratio(r.Net.Published.Median, r.Net.Loopback.Median)
	r.Net.ReverseRatio = ratio(r.Net.PublishedReverse.Median, r.Net.Loopback.Median)
	r.Net.OutboundRatio = ratio(r.Net.Outbound.Median, r.Net.Loopback.Median)

	r.Targets = nil
	add := func(measured bool, what, value, target string, met bool) {
		if measured {
			r.Targets = append(r.Targets, Target{What: what, Value: value, Target: target, Met: met})
		}
	}
	add(r.Seed.N > 0 && r.Runc.N > 0, "seed flow vs runc run (median)",
		fmt.Sprintf("%.2f×", r.SeedRatio), "≤ 2×", r.SeedRatio <= 2)
	add(r.Seed.N > 0 && r.SeedUnconfined.N > 0, "seed flow with the default seccomp profile vs seccomp=unconfined (median)",
		fmt.Sprintf("%.2f×", r.SeedSeccompRatio), "≤ 1.1×", r.SeedSeccompRatio <= 1.1)
	add(r.Seed.N > 0, "seed flow vs rootless Docker (reference 300 ms)",
		fmt.Sprintf("1/%.1f", dockerRootlessMs/r.Seed.Median), "≤ 1/8", r.Seed.Median <= dockerRootlessMs/8.0)
	add(r.DockerRun.N > 0, "docker run --rm busybox true (median)",
		fmt.Sprintf("%.1f ms", r.DockerRun.Median), "≤ 60 ms", r.DockerRun.Median <= 60)
	add(r.Pull.Hutch.N > 0, "pull of the large image vs gzip -dc | tar -x (median of pairs)",
		fmt.Sprintf("%.2f×", r.Pull.Ratio), "≤ 1.1×", r.Pull.Ratio <= 1.1)
	add(r.Net.Published.Median > 0, "published port throughput vs loopback (median)",
		fmt.Sprintf("%.0f%%", 100*r.Net.PublishedRatio), "≥ 50%", r.Net.PublishedRatio >= 0.5)
	add(r.Memory.Idle.TreeRSS > 0, "idle daemon tree RSS",
		fmt.Sprintf("%.1f MiB", mib(r.Memory.Idle.TreeRSS)), "≤ 40 MiB", mib(r.Memory.Idle.TreeRSS) <= 40)
	if n := len(r.Memory.PerCtr); n > 0 {
		pc := r.Memory.PerCtr[n-1]
		add(true, fmt.Sprintf("shim RSS, each (at %d)", pc.Containers),
			fmt.Sprintf("%.2f MiB", mib(pc.ShimRSS)), "≤ 3 MiB", mib(pc.ShimRSS) <= 3)
		add(true, fmt.Sprintf("overhead per container, PSS (at %d)", pc.Containers),
			fmt.Sprintf("%.2f MiB", mib(pc.PSS)), "≤ 3 MiB", mib(pc.PSS) <= 3)
	}
	add(r.Idle.Fresh.TreeRSS > 0, fmt.Sprintf("idle tree RSS %s after %d containers vs before", idleAfter, idleBurst),
		fmt.Sprintf("%+.1f MiB", mib(r.Idle.Growth)), "≤ +2 MiB", mib(r.Idle.Growth) <= 2)
	add(r.Idle.AfterSecond.TreeRSS > 0, fmt.Sprintf("idle tree RSS %s after a second burst vs after the first", idleAfter),
		fmt.Sprintf("%+.1f MiB", mib(r.Idle.Repeat)), "≤ +0.5 MiB", mib(r.Idle.Repeat) <= 0.5)
	b := r.Build
	// The same client on both sides (bkctl makes buildctl's calls), so
	// that the ratio is the engines'.
	add(b.BkctlHutch.Cold.Wall.N > 0 && b.Buildkitd.Cold.Wall.N > 0, "cold 3-stage build, bkctl → hutch vs buildctl → rootless buildkitd (median)",
		fmt.Sprintf("%.2f×", b.ColdRatio), "≤ 1.3×", b.ColdRatio <= 1.3)
	add(b.BkctlHutch.Cached.Wall.N > 0 && b.Buildkitd.Cached.Wall.N > 0, "cached rebuild, bkctl → hutch vs buildctl → rootless buildkitd (median)",
		fmt.Sprintf("%.2f×", b.CachedRatio), "≤ 1.2×", b.CachedRatio <= 1.2)
	add(b.IdleBefore.TreeRSS > 0, "idle daemon tree RSS before the first build",
		fmt.Sprintf("%.1f MiB", mib(b.IdleBefore.TreeRSS)), "≤ 40 MiB", mib(b.IdleBefore.TreeRSS) <= 40)
	l := r.Load
	add(l.Containers > 0, fmt.Sprintf("%d containers by %d clients: failures", l.Containers, l.Clients),
		fmt.Sprint(l.Failures), "0", l.Failures == 0)
	add(l.Latency.N > 0, fmt.Sprintf("concurrent p99 (%d bursts) vs one at a time (median)", l.bursts()),
		fmt.Sprintf("%.1f×", l.P99Ratio), "≤ 10×", l.P99Ratio <= 10)
}

func mib(kib int) float64 { return float64(kib) / 1024 }

// printTable writes what was measured, then the targets.
func (r *Results) printTable(w io.Writer) {
	fmt.Fprintf(w, "\nhutch bench — %s, %s CPUs, kernel %s, load %s → %s\n\n",
		r.Host["hutch"], r.Host["cpus"], r.Host["kernel"], r.LoadAvg["before"], r.LoadAvg["after"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tn\tmedian\tp95\tp99\tmax\tbaseline (median)\tratio")
	dist := func(name string, d Dist, base string, rat float64) {
		if d.N == 0 {
			return
		}
		rs := ""
		if rat > 0 {
			rs = fmt.Sprintf("%.2f×", rat)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%s\t%s\n", name, d.N, d.Median, d.P95, d.P99, d.Max, base, rs)
	}
	dist("seed flow over the API (echo hello)", r.Seed, fmt.Sprintf("runc run %.1f ms", r.Runc.Median), r.SeedRatio)
	dist("seed flow, seccomp=unconfined", r.SeedUnconfined, fmt.Sprintf("default profile %.1f ms", r.Seed.Median), r.SeedSeccompRatio)
	dist("runc run (rootless, same rootfs)", r.Runc, "", 0)
	dist("docker run --rm busybox true", r.DockerRun, fmt.Sprintf("docker version %.1f ms", r.DockerCLI.Median), 0)
	dist("pull of the large image (ratio: median of pairs)", r.Pull.Hutch, fmt.Sprintf("gzip|tar %.0f ms", r.Pull.Baseline.Median), r.Pull.Ratio)
	dist("  gzip -dc | tar -x of its layers", r.Pull.Baseline, "", 0)
	dist("concurrent container (create…remove)", r.Load.Latency, fmt.Sprintf("alone %.1f ms", r.Load.Single.Median), r.Load.P99Ratio)
	dist("daemon start to first /_ping", r.ColdStart, "", 0)
	dist("daemon stop (SIGTERM to exit)", r.Stop, "", 0)
	if sw := r.Swarm; sw.Replace.N > 0 {
		dist("swarm: task container killed → replacement running", sw.Replace,
			fmt.Sprintf("idle %.1f → %.1f MiB with swarm", mib(sw.IdleOff.TreeRSS), mib(sw.IdleOn.TreeRSS)), 0)
	}
	bd := r.Build
	// The goal's rows: the same client, BuildKit's Go client making
	// buildctl's calls, on both sides; buildx's rows are for information.
	dist("build, cold: bkctl → hutch (goal: the same client as buildctl; hutch-buildkit's start included)", bd.BkctlHutch.Cold.Wall,
		fmt.Sprintf("buildctl %.0f ms", bd.Buildkitd.Cold.Wall.Median), bd.ColdRatio)
	dist("  buildctl → rootless buildkitd, cold (busybox pull included)", bd.Buildkitd.Cold.Wall, "", 0)
	dist("build, cached rebuild: bkctl → hutch (goal: the same client)", bd.BkctlHutch.Cached.Wall,
		fmt.Sprintf("buildctl %.0f ms", bd.Buildkitd.Cached.Wall.Median), bd.CachedRatio)
	dist("  buildctl → rootless buildkitd, cached", bd.Buildkitd.Cached.Wall, "", 0)
	dist("  info: docker buildx (docker driver) → hutch, cold", bd.Hutch.Cold.Wall,
		fmt.Sprintf("buildx→bkd %.0f ms", bd.BuildxBuildkitd.Cold.Wall.Median), bd.SameClientColdRatio)
	dist("  info: docker buildx (remote driver) → buildkitd, cold", bd.BuildxBuildkitd.Cold.Wall, "", 0)
	dist("  info: docker buildx (docker driver) → hutch, cached", bd.Hutch.Cached.Wall,
		fmt.Sprintf("buildx→bkd %.0f ms", bd.BuildxBuildkitd.Cached.Wall.Median), bd.SameClientCachedRatio)
	dist("  info: docker buildx (remote driver) → buildkitd, cached", bd.BuildxBuildkitd.Cached.Wall, "", 0)
	dist("  buildkitd start to its socket (not in its builds)", bd.BuildkitdStart, "", 0)
	tw.Flush()

	if len(r.SeedPhases) > 0 {
		fmt.Fprintf(w, "\nseed flow by call (median ms):")
		for _, p := range r.SeedPhases {
			fmt.Fprintf(w, " %s %.2f;", p.Name, p.Median)
		}
		fmt.Fprintln(w)
	}
	if r.Pull.Files > 0 {
		fmt.Fprintf(w, "large image: %d files, %.0f MB extracted, %.0f MB compressed; pull ÷ gzip|tar by pair %v (ratio of the medians %.2f×)\n",
			r.Pull.Files, float64(r.Pull.Bytes)/1e6, float64(r.Pull.CompressedBytes)/1e6, r.Pull.PairRatios, r.Pull.MediansRatio)
	}
	if l := r.Load; l.Containers > 0 {
		fmt.Fprintf(w, "concurrency: %d bursts of %d containers by %d clients in %.2f s, %.1f containers/s, %d failed",
			l.bursts(), l.Containers, l.Clients, l.WallMs/1000, l.PerSecond, l.Failures)
		if len(l.BurstRatios) > 0 {
			fmt.Fprintf(w, "; p99 ÷ alone by burst %v", l.BurstRatios)
		}
		if start, lat, first, ok := l.slowest(); ok {
			wave := "after the first wave"
			if first {
				wave = "of the first wave"
			}
			fmt.Fprintf(w, "; the slowest (%.0f ms) started %.2f s in, %s", lat, start/1000, wave)
			if steps, ok := l.slowestSteps(); ok {
				sep := " ("
				for i, n := range loadSteps {
					fmt.Fprintf(w, "%s%s %.0f", sep, n, steps[i])
					sep = ", "
				}
				fmt.Fprintf(w, " ms)")
			}
		}
		fmt.Fprintln(w)
		if c := l.CPU; c.Hutch > 0 {
			all := c.Hutch + c.Clients + c.Other + c.Idle + c.Steal
			n := float64(l.Containers * l.bursts())
			fmt.Fprintf(w, "  its CPU time: hutch %.1f ms per container, the clients %.1f; of the machine's: hutch %.0f%%, clients %.0f%%, the rest %.0f%%, idle %.0f%%, steal %.0f%%\n",
				c.Hutch/n, c.Clients/n, 100*c.Hutch/all, 100*c.Clients/all, 100*c.Other/all, 100*c.Idle/all, 100*c.Steal/all)
		}
	}
	if n := r.Net; n.Loopback.Median > 0 {
		fmt.Fprintf(w, "throughput (iperf3, median of %d × %d s, Gbit/s): loopback %.2f; published port %.2f (%.0f%%), reverse %.2f (%.0f%%); ",
			len(n.Loopback.Runs), n.Seconds, n.Loopback.Median, n.Published.Median, 100*n.PublishedRatio,
			n.PublishedReverse.Median, 100*n.ReverseRatio)
		if n.OutboundError != "" {
			fmt.Fprintf(w, "outbound failed: %s\n", n.OutboundError)
		} else {
			fmt.Fprintf(w, "outbound via host-gateway %.2f (%.0f%%)\n", n.Outbound.Median, 100*n.OutboundRatio)
		}
	}
	if m := r.Memory; m.Idle.TreeRSS > 0 {
		fmt.Fprintf(w, "memory (MiB, RSS/PSS): idle tree %.1f/%.1f", mib(m.Idle.TreeRSS), mib(m.Idle.TreePSS))
		for _, p := range m.Idle.Procs {
			fmt.Fprintf(w, " [%s %.1f/%.1f]", p.Name, mib(p.RSS), mib(p.PSS))
		}
		fmt.Fprintln(w)
		for i, s := range m.Loaded {
			pc := m.PerCtr[i]
			fmt.Fprintf(w, "  %3d sleeping: tree %.1f/%.1f, %d shims %.1f/%.1f; per container %.2f/%.2f, per shim %.2f/%.2f\n",
				s.Containers, mib(s.TreeRSS), mib(s.TreePSS), s.Shims, mib(s.ShimRSS), mib(s.ShimPSS),
				mib(pc.RSS), mib(pc.PSS), mib(pc.ShimRSS), mib(pc.ShimPSS))
		}
	}
	r.Idle.print(w)
	r.Build.print(w)

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target (docs/design.md)\tmeasured\ttarget\tmet")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.What, t.Value, t.Target, met)
	}
	tw.Flush()
}

func (r *Results) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func firstLine(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		return "?"
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}
