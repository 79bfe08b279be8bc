package shim_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
)

// BenchmarkRunTrue times create+start+wait of `true` (what one `docker run
// --rm busybox true` costs in the shim) and reports the median, which is
// what the goals and platform constraints of docs/design.md compare. Run with -benchtime=20x.
func BenchmarkRunTrue(b *testing.B) { benchRunTrue(b, func() *specs.Spec { return testSpec("true") }) }

// BenchmarkRunTrueSeccomp times what BenchmarkRunTrue does for a container
// with Docker's default seccomp profile (which every container gets unless
// it is unconfined or privileged) and, alternating with it so that both
// see the same load, for one without: seccomp-ratio is the first median
// over the second, what the filter costs a start.
func BenchmarkRunTrueSeccomp(b *testing.B) {
	ctx := testCtx(b)
	filtered := testSpec("true")
	p, err := seccomp.GetDefaultProfile(filtered)
	if err != nil {
		b.Fatal(err)
	}
	filtered.Linux.Seccomp = p
	var with, without []time.Duration
	run := func(s *specs.Spec) time.Duration {
		b.StopTimer()
		o := newOpts(b, s)
		b.StartTimer()
		t0 := time.Now()
		c, err := shim.Start(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := c.Wait(ctx); err != nil || st.ExitCode != 0 {
			b.Fatalf("wait: %+v %v", st, err)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		with = append(with, run(filtered))
		without = append(without, run(testSpec("true")))
	}
	slices.Sort(with)
	slices.Sort(without)
	b.ReportMetric(float64(with[len(with)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(without[len(without)/2].Microseconds())/1000, "unconfined-median-ms")
	b.ReportMetric(float64(with[len(with)/2])/float64(without[len(without)/2]), "seccomp-ratio")
}

func benchRunTrue(b *testing.B, spec func() *specs.Spec) {
	ctx := testCtx(b)
	var times []time.Duration
	for b.Loop() {
		b.StopTimer()
		o := newOpts(b, spec())
		b.StartTimer()
		t0 := time.Now()
		c, err := shim.Start(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		st, err := c.Wait(ctx)
		if err != nil || st.ExitCode != 0 {
			b.Fatalf("wait: %+v %v", st, err)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(times[len(times)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkShimMemory reports the memory of shims whose containers run
// (docs/design.md, Performance goals: per container overhead ≤ 3 MiB). Five run at once so that
// the binary's pages, shared through the page cache, are counted once:
// pss-KiB is the per-shim share of all that is resident, private-KiB what
// each shim alone holds (its heap and stacks), rss-KiB the plain RSS.
func BenchmarkShimMemory(b *testing.B) {
	const n = 5
	var rss, pss, priv []int
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var clients []*shim.Client
		for range n {
			c, err := shim.Start(ctx, newOpts(b, testSpec("sh", "-c", "echo started; sleep 100")))
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		// Let the shims settle after start-up (the shim frees its start-up garbage after a second).
		time.Sleep(1500 * time.Millisecond)
		for _, c := range clients {
			st, err := c.State(ctx)
			if err != nil {
				b.Fatal(err)
			}
			m, err := smapsKiB(st.ShimPid)
			if err != nil {
				b.Fatal(err)
			}
			rss, pss = append(rss, m["Rss"]), append(pss, m["Pss"])
			priv = append(priv, m["Private_Clean"]+m["Private_Dirty"])
		}
		for _, c := range clients {
			_ = c.Kill(ctx, syscall.SIGKILL)
			_, _ = c.Wait(ctx)
		}
		cancel()
		b.StartTimer()
	}
	for _, x := range [][]int{rss, pss, priv} {
		slices.Sort(x)
	}
	b.ReportMetric(float64(rss[len(rss)/2]), "rss-KiB")
	b.ReportMetric(float64(pss[len(pss)/2]), "pss-KiB")
	b.ReportMetric(float64(priv[len(priv)/2]), "private-KiB")
}

// smapsKiB reads the totals of /proc/PID/smaps_rollup.
func smapsKiB(pid int) (map[string]int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		if err == nil {
			m[k] = n
		}
	}
	return m, s.Err()
}
