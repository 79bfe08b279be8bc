package main

import (
	"math"
	"slices"
	"time"
)

// Dist is a distribution of durations in milliseconds: the samples as
// measured, in order, and the figures the table shows.
type Dist struct {
	Samples []float64 `json:"samples_ms"`
	N       int       `json:"n"`
	Min     float64   `json:"min_ms"`
	Median  float64   `json:"median_ms"`
	Mean    float64   `json:"mean_ms"`
	P95     float64   `json:"p95_ms"`
	P99     float64   `json:"p99_ms"`
	Max     float64   `json:"max_ms"`
}

func (d *Dist) add(t time.Duration) {
	d.Samples = append(d.Samples, float64(t.Microseconds())/1000)
}

// summarize fills in the figures from the samples.
func (d *Dist) summarize() {
	d.N = len(d.Samples)
	if d.N == 0 {
		return
	}
	s := slices.Clone(d.Samples)
	slices.Sort(s)
	d.Min, d.Max = s[0], s[len(s)-1]
	d.Median = quantile(s, 0.5)
	d.P95 = quantile(s, 0.95)
	d.P99 = quantile(s, 0.99)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	d.Mean = round3(sum / float64(len(s)))
}

// quantile of sorted samples, interpolating between the closest ranks
// (the "R-7" definition most tools use).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return round3(sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo]))
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ratio is a/b, 0 when b is not measured.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

// pairRatios are a[i]/b[i] for the pairs both series have.
func pairRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, ratio(a[i], b[i]))
		}
	}
	return out
}

// median of unsorted values, 0 when there are none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return quantile(s, 0.5)
}

// phases collects the per-call times of a flow, to show where its time goes.
type phases struct {
	names []string
	dists map[string]*Dist
}

func newPhases(names ...string) *phases {
	p := &phases{names: names, dists: map[string]*Dist{}}
	for _, n := range names {
		p.dists[n] = &Dist{}
	}
	return p
}

// medians returns the median of each phase, in the phases' order.
func (p *phases) medians() []PhaseTime {
	var out []PhaseTime
	for _, n := range p.names {
		d := p.dists[n]
		d.summarize()
		out = append(out, PhaseTime{Name: n, Median: d.Median, P95: d.P95})
	}
	return out
}

// PhaseTime is one step of a flow, as the client saw it.
type PhaseTime struct {
	Name   string  `json:"name"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
}
