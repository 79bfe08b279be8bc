package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Load is the concurrency figure: containers created, started, waited on
// and removed by concurrent clients, in Bursts bursts of Containers each.
type Load struct {
	Clients    int      `json:"clients"`
	Containers int      `json:"containers"`
	Bursts     int      `json:"bursts"`
	Failures   int      `json:"failures"`
	Errors     []string `json:"errors,omitempty"`
	// WallMs is the bursts' time, added up; PerSecond the containers
	// that succeeded over it.
	WallMs    float64 `json:"wall_ms"`
	PerSecond float64 `json:"containers_per_second"`
	// Latency holds the containers of every burst.
	Latency Dist `json:"latency"`
	// P99Ratio is the p99 per-container latency over the median of the
	// same steps done one at a time, the p99 taken over every burst's
	// containers. One burst's p99 is its second slowest container: at
	// one commit it went from 8.3 to 13.3 times in runs back to back
	//, and from 7.8 to 13.6 times between the bursts of one
	// run, whose worst burst's tail then made the p99 of all (12.9×).
	P99Ratio float64 `json:"p99_over_single_median"`
	// BurstRatios are each burst's p99 over the same median, to show
	// the spread.
	BurstRatios []float64 `json:"burst_p99_ratios"`
	Single      Dist      `json:"single"`
	// StartsMs is when each concurrent container's create began, in ms
	// after its burst began, and BurstOf its burst, in the order of
	// Latency.Samples: they show whether the slowest were the first wave
	// or a slow spell later.
	StartsMs []float64 `json:"starts_ms,omitempty"`
	BurstOf  []int     `json:"burst_of,omitempty"`
	// StepsMs is each concurrent container's time in its calls (create,
	// start, wait, remove: loadSteps), in the order of Latency.Samples:
	// where the slowest lost their time.
	StepsMs [][len(loadSteps)]float64 `json:"steps_ms,omitempty"`
	// CPU is where the machine's CPU time went during the bursts, added
	// up.
	CPU CPUUse `json:"cpu"`
}

// slowest is the slowest concurrent container: when it started (ms into
// its burst), its latency, and whether it was of its burst's first wave
// (among the first Clients to start). ok is false without start times.
func (l *Load) slowest() (startMs, latencyMs float64, firstWave, ok bool) {
	i := l.slowestIndex()
	if i < 0 || len(l.StartsMs) != len(l.Latency.Samples) {
		return 0, 0, false, false
	}
	sameBurst := func(j int) bool {
		return len(l.BurstOf) != len(l.StartsMs) || l.BurstOf[j] == l.BurstOf[i]
	}
	earlier := 0
	for j, t := range l.StartsMs {
		if t < l.StartsMs[i] && sameBurst(j) {
			earlier++
		}
	}
	return l.StartsMs[i], l.Latency.Samples[i], earlier < l.Clients, true
}

// bursts is how many bursts ran: results from before -bursts had one.
func (l *Load) bursts() int { return max(l.Bursts, 1) }

// slowestIndex is the index of the slowest concurrent container's
// latency, -1 with none.
func (l *Load) slowestIndex() int {
	s := l.Latency.Samples
	if len(s) == 0 {
		return -1
	}
	i := 0
	for j, v := range s {
		if v > s[i] {
			i = j
		}
	}
	return i
}

// slowestSteps is the time of each call of the slowest concurrent
// container (loadSteps); ok is false without them.
func (l *Load) slowestSteps() (steps [len(loadSteps)]float64, ok bool) {
	i := l.slowestIndex()
	if i < 0 || len(l.StepsMs) != len(l.Latency.Samples) {
		return steps, false
	}
	return l.StepsMs[i], true
}

// burstRatios are the p99 of each burst's containers over the median
// of the containers alone.
func (l *Load) burstRatios() []float64 {
	if len(l.BurstOf) != len(l.Latency.Samples) {
		return nil
	}
	by := make([]Dist, l.bursts())
	for i, v := range l.Latency.Samples {
		if b := l.BurstOf[i]; b >= 0 && b < len(by) {
			by[b].Samples = append(by[b].Samples, v)
		}
	}
	var out []float64
	for _, d := range by {
		if len(d.Samples) > 0 {
			d.summarize()
			out = append(out, ratio(d.P99, l.Single.Median))
		}
	}
	return out
}

// benchLoad times the steps one container at a time (the single container
// latency the p99 is compared with) before, between and after the
// bursts, in each of which clients goroutines, each with its own SDK
// client (its own connections), split the containers between them. The
// singles around the bursts keep the ratio to the machine's speed during
// them: in runs minutes apart the single median was 25.7 and 36.2 ms.
func benchLoad(ctx context.Context, e *env, res *Results) error {
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	l := &res.Load
	l.Clients, l.Containers, l.Bursts = e.cfg.clients, e.cfg.containers, e.cfg.bursts
	single := func(runs int) error {
		for range runs {
			t, _, err := oneContainer(ctx, d.api, e.busybox)
			if err != nil {
				return fmt.Errorf("single container: %w (daemon log %s)", err, d.logPath)
			}
			l.Single.add(t)
		}
		return nil
	}
	for range warmups {
		if _, _, err := oneContainer(ctx, d.api, e.busybox); err != nil {
			return fmt.Errorf("single container: %w (daemon log %s)", err, d.logPath)
		}
	}
	// At least singleRuns in all, as many in each gap.
	gap := (singleRuns + l.Bursts) / (l.Bursts + 1)
	for b := range l.Bursts {
		if err := single(gap); err != nil {
			return err
		}
		if err := burst(ctx, e, d, l, b); err != nil {
			return err
		}
		if err := quiesce(); err != nil {
			return err
		}
	}
	if l.Failures > 0 {
		progress("   %d of %d containers failed, e.g. %s", l.Failures, l.Containers*l.Bursts, l.Errors[0])
	}
	return single(gap)
}

// quiesce waits, up to 10 s, for a quarter second in which the machine's
// CPUs were less than 5% busy: the work a burst leaves behind (the
// removals' background deletions, the kernel's teardown of 100 network
// namespaces) is done before the next part of the figure.
func quiesce() error {
	n := float64(runtime.NumCPU())
	const window = 250 * time.Millisecond
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		a, _, _, err := readStat()
		if err != nil {
			return err
		}
		time.Sleep(window)
		b, _, _, err := readStat()
		if err != nil {
			return err
		}
		if (b-a)/(n*float64(window.Milliseconds())) < 0.05 {
			return nil
		}
	}
	return nil
}

// burst runs l.Containers containers from l.Clients clients at once and
// adds their figures to l's.
func burst(ctx context.Context, e *env, d *daemon, l *Load, idx int) error {
	before, err := readCPU(d.cmd.Process.Pid)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := range l.Clients {
		n := l.Containers / l.Clients
		if c < l.Containers%l.Clients {
			n++
		}
		api, err := client.New(client.WithHost("unix://" + d.socket))
		if err != nil {
			return err
		}
		defer api.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				began := time.Since(t0)
				t, steps, err := oneContainer(ctx, api, e.busybox)
				mu.Lock()
				if err != nil {
					l.Failures++
					if len(l.Errors) < 10 {
						l.Errors = append(l.Errors, err.Error())
					}
				} else {
					l.Latency.add(t)
					l.StartsMs = append(l.StartsMs, float64(began.Microseconds())/1000)
					l.BurstOf = append(l.BurstOf, idx)
					l.StepsMs = append(l.StepsMs, steps)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	after, err := readCPU(d.cmd.Process.Pid)
	if err != nil {
		return err
	}
	l.CPU = l.CPU.plus(before.use(after))
	l.WallMs = round3(l.WallMs + float64(wall.Microseconds())/1000)
	l.PerSecond = round3(float64(len(l.Latency.Samples)) / (l.WallMs / 1000))
	return nil
}

// singleRuns is how many containers are timed one at a time.
const singleRuns = 20

// loadSteps name the calls of one container of the concurrency figure.
var loadSteps = [...]string{"create", "start", "wait", "remove"}

// oneContainer creates, starts, waits for and removes one `true`; it
// returns the time of the whole and of each call (loadSteps; the wait's
// registration counts in the start).
func oneContainer(ctx context.Context, api *client.Client, ref string) (time.Duration, [len(loadSteps)]float64, error) {
	var steps [len(loadSteps)]float64
	t0 := time.Now()
	mark := t0
	step := func(i int) {
		now := time.Now()
		steps[i] = float64(now.Sub(mark).Microseconds()) / 1000
		mark = now
	}
	created, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}},
	})
	if err != nil {
		return 0, steps, fmt.Errorf("create: %w", err)
	}
	step(0)
	wait := api.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	if _, err := api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		api.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
		return 0, steps, fmt.Errorf("start: %w", err)
	}
	step(1)
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return 0, steps, fmt.Errorf("exit status %d", r.StatusCode)
		}
	case err := <-wait.Error:
		return 0, steps, fmt.Errorf("wait: %w", err)
	case <-ctx.Done():
		return 0, steps, ctx.Err()
	}
	step(2)
	if _, err := api.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{}); err != nil {
		return 0, steps, fmt.Errorf("remove: %w", err)
	}
	step(3)
	return time.Since(t0), steps, nil
}
