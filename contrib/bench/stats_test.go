package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float64
		q, want float64
	}{
		{"one sample", []float64{7}, 0.95, 7},
		{"median of odd", []float64{1, 2, 3}, 0.5, 2},
		{"median of even interpolates", []float64{1, 2, 3, 4}, 0.5, 2.5},
		{"p95 interpolates between the top two", []float64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.95, 95},
		{"max", []float64{1, 5, 9}, 1, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantile(tc.samples, tc.q); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("quantile(%v, %v) = %v, want %v", tc.samples, tc.q, got, tc.want)
			}
		})
	}
}

func TestDistSummarize(t *testing.T) {
	var d Dist
	for _, ms := range []int{30, 10, 20} {
		d.add(time.Duration(ms) * time.Millisecond)
	}
	d.summarize()
	if d.N != 3 || d.Min != 10 || d.Median != 20 || d.Max != 30 || d.Mean != 20 {
		t.Errorf("summary %+v", d)
	}
	if d.Samples[0] != 30 {
		t.Errorf("samples reordered: %v", d.Samples)
	}
}

func TestDeriveTargets(t *testing.T) {
	r := &Results{
		Seed: Dist{Samples: []float64{30, 32, 34}},
		Runc: Dist{Samples: []float64{20, 20, 20}},
		Load: Load{Containers: 100, Clients: 10, Failures: 1},
	}
	r.derive()
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.What] = tg.Met
	}
	for what, want := range map[string]bool{
		"seed flow vs runc run (median)":                  true,  // 1.6×
		"seed flow vs rootless Docker (reference 300 ms)": true,  // 32 ≤ 37.5
		"100 containers by 10 clients: failures":          false, // one failed
	} {
		if got, ok := met[what]; !ok || got != want {
			t.Errorf("target %q: met=%v (present %v), want %v", what, got, ok, want)
		}
	}
	if _, ok := met["docker run --rm busybox true (median)"]; ok {
		t.Error("a target without measurements is listed")
	}
}

// The pull's figure is the median of the per-pair ratios: one pair slowed
// by the machine (the first, 5.3 s) moves it less than it moves the
// ratio of the two medians.
func TestPullPairRatios(t *testing.T) {
	r := &Results{Pull: Pull{
		Hutch:    Dist{Samples: []float64{5300, 1210, 1000, 940, 1180}},
		Baseline: Dist{Samples: []float64{1020, 1190, 1010, 900, 1600}},
	}}
	r.derive()
	want := []float64{5.2, 1.02, 0.99, 1.04, 0.74}
	if !slices.Equal(r.Pull.PairRatios, want) {
		t.Fatalf("pair ratios %v, want %v", r.Pull.PairRatios, want)
	}
	if r.Pull.Ratio != 1.02 {
		t.Errorf("figure %v, want the median pair ratio 1.02", r.Pull.Ratio)
	}
	if r.Pull.MediansRatio != 1.16 { // 1180 / 1020
		t.Errorf("ratio of medians %v, want 1.16", r.Pull.MediansRatio)
	}
	for _, tg := range r.Targets {
		if strings.HasPrefix(tg.What, "pull") && !tg.Met {
			t.Errorf("target %q not met at 1.02×", tg.What)
		}
	}
	if got := pairRatios([]float64{10, 20, 30}, []float64{5, 0}); !slices.Equal(got, []float64{2}) {
		t.Errorf("pairRatios with an unmeasured and a missing baseline = %v, want [2]", got)
	}
}

// TestSlowest: the slowest concurrent container, when it started and
// whether it was among the first Clients to start; none without start
// times (results of bench runs before them) or with misaligned ones.
func TestSlowest(t *testing.T) {
	l := Load{Clients: 2, Latency: Dist{Samples: []float64{100, 300, 120, 250}}, StartsMs: []float64{0, 1, 90, 200}}
	start, lat, first, ok := l.slowest()
	if !ok || start != 1 || lat != 300 || !first {
		t.Errorf("slowest = %v ms in, %v ms, first wave %v, %v; want 1, 300, true, true", start, lat, first, ok)
	}
	l.Latency.Samples[3] = 400
	if start, lat, first, ok := l.slowest(); !ok || start != 200 || lat != 400 || first {
		t.Errorf("slowest = %v ms in, %v ms, first wave %v, %v; want 200, 400, false, true", start, lat, first, ok)
	}
	for _, starts := range [][]float64{nil, {0, 1}} {
		l.StartsMs = starts
		if _, _, _, ok := l.slowest(); ok {
			t.Errorf("slowest with start times %v: ok", starts)
		}
	}
}

// TestSlowestOfBursts: the first wave is the first Clients of the
// slowest container's own burst, and each burst's p99 is over the
// containers alone's median.
func TestSlowestOfBursts(t *testing.T) {
	l := Load{
		Clients: 2, Bursts: 2,
		Latency:  Dist{Samples: []float64{100, 120, 110, 130, 90, 400}},
		StartsMs: []float64{0, 1, 50, 0, 1, 40},
		BurstOf:  []int{0, 0, 0, 1, 1, 1},
		Single:   Dist{Samples: []float64{10, 10, 10}},
	}
	l.Single.summarize()
	if start, lat, first, ok := l.slowest(); !ok || start != 40 || lat != 400 || first {
		t.Errorf("slowest = %v ms in, %v ms, first wave %v, %v; want 40, 400, false, true", start, lat, first, ok)
	}
	l.StartsMs[5] = 0.5 // second of its burst: its first wave
	if _, _, first, _ := l.slowest(); !first {
		t.Error("the second container of its burst is not of the first wave")
	}
	got := l.burstRatios()
	if len(got) != 2 || got[0] != 11.98 || got[1] != 39.46 {
		t.Errorf("burst ratios %v, want [11.98 39.46]", got)
	}
	l.BurstOf = l.BurstOf[:2]
	if got := l.burstRatios(); got != nil {
		t.Errorf("burst ratios with misaligned bursts %v, want none", got)
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		labels []string
	}{
		{"decade", 8, 120, []string{"10", "20", "50", "100"}},
		{"two decades", 0.5, 30, []string{"0.5", "1", "2", "5", "10", "20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tk := range ticks125(tc.lo, tc.hi) {
				if tk.Label != "" {
					got = append(got, tk.Label)
				}
			}
			if len(got) != len(tc.labels) {
				t.Fatalf("labels %v, want %v", got, tc.labels)
			}
			for i := range got {
				if got[i] != tc.labels[i] {
					t.Errorf("labels %v, want %v", got, tc.labels)
				}
			}
		})
	}
}

func TestEditSpec(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"runc's rootless spec", `{"ociVersion":"1.0.2-dev","process":{"terminal":true,"args":["sh"],"cwd":"/"},"linux":{"uidMappings":[{"containerID":0,"hostID":1000,"size":1}]}}`, true},
		{"no process", `{"ociVersion":"1.0.2-dev"}`, false},
		{"not JSON", `{`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(p, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			err := editSpec(p, []string{"echo", "hello"})
			if (err == nil) != tc.ok {
				t.Fatalf("editSpec: %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			b, _ := os.ReadFile(p)
			var spec struct {
				Version string `json:"ociVersion"`
				Process struct {
					Terminal bool     `json:"terminal"`
					Args     []string `json:"args"`
					Cwd      string   `json:"cwd"`
				} `json:"process"`
				Linux map[string]any `json:"linux"`
			}
			if err := json.Unmarshal(b, &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Process.Terminal || strings.Join(spec.Process.Args, " ") != "echo hello" {
				t.Errorf("process not edited: %+v", spec.Process)
			}
			if spec.Version != "1.0.2-dev" || spec.Process.Cwd != "/" || spec.Linux["uidMappings"] == nil {
				t.Errorf("other fields lost: %s", b)
			}
		})
	}
}
