package main

import (
	"strings"
	"testing"
	"time"
)

// rawjson is a build's progress as buildx and buildctl print it with
// --progress=rawjson (cut down): a vertex reported again as it starts,
// completes or starts over, statuses and logs between, a line that is
// not JSON.
const rawjson = `{"vertexes":[{"digest":"sha256:aa","name":"[internal] load build definition from Dockerfile"}]}
{"vertexes":[{"digest":"sha256:aa","name":"[internal] load build definition from Dockerfile","started":"2026-11-29T06:57:07.800Z","completed":"2026-11-29T06:57:07.801Z"},{"digest":"sha256:aa","name":"[internal] load build definition from Dockerfile","started":"2026-11-29T06:57:07.802Z"}]}
{"statuses":[{"id":"transferring dockerfile:","vertex":"sha256:aa","current":446}]}
{"vertexes":[{"digest":"sha256:aa","name":"[internal] load build definition from Dockerfile","started":"2026-11-29T06:57:07.802Z","completed":"2026-11-29T06:57:07.810Z"}]}
WARNING: a line of the CLI's own
{"vertexes":[{"digest":"sha256:bb","name":"[one 1/2] FROM 127.0.0.1:5000/library/busybox:latest@sha256:59cc40fa4987e3d5a1beb1782efe80474dbcfb26a7d12ab5edcb9b6da17f4cb5","started":"2026-11-29T06:57:07.820Z"}]}
{"vertexes":[{"digest":"sha256:cc","name":"[one 2/2] RUN echo a > /a","started":"2026-11-29T06:57:07.850Z"}],"logs":[{"vertex":"sha256:cc","stream":1,"data":"aGk="}]}
{"vertexes":[{"digest":"sha256:bb","started":"2026-11-29T06:57:07.820Z","completed":"2026-11-29T06:57:07.845Z"}]}
{"vertexes":[{"digest":"sha256:cc","name":"[one 2/2] RUN echo a > /a","started":"2026-11-29T06:57:07.850Z","completed":"2026-11-29T06:57:07.950Z"}]}
{"vertexes":[{"digest":"sha256:dd","name":"exporting to image","started":"2026-11-29T06:57:07.955Z"}]}
`

func TestParseProgress(t *testing.T) {
	steps := parseProgress([]byte(rawjson), "127.0.0.1:5000")
	at := func(ms int) time.Time { return time.Date(2026, 11, 29, 6, 57, 7, ms*1e6, time.UTC) }
	want := []buildStep{
		// The earliest start, the latest end.
		{Name: "[internal] load build definition from Dockerfile", Start: at(800), End: at(810)},
		// The registry as REG, no digest; the name from an earlier line.
		{Name: "[one 1/2] FROM REG/library/busybox:latest", Start: at(820), End: at(845)},
		{Name: "[one 2/2] RUN echo a > /a", Start: at(850), End: at(950)},
		// "exporting to image" never completed: left out.
	}
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d: %+v", len(steps), len(want), steps)
	}
	for i, s := range steps {
		w := want[i]
		if s.Name != w.Name || !s.Start.Equal(w.Start) || !s.End.Equal(w.End) || s.Cached || s.Error != "" {
			t.Errorf("step %d = %+v, want %+v", i, s, w)
		}
	}
	if got := parseProgress([]byte("#1 [internal] load build definition\n#1 DONE 0.0s\n"), ""); len(got) != 0 {
		t.Errorf("plain progress gave steps: %+v", got)
	}
}

func TestCheckCached(t *testing.T) {
	step := func(name string, cached bool) buildStep { return buildStep{Name: name, Cached: cached} }
	meta := step("[internal] load metadata for REG/library/busybox:latest", false)
	for _, tc := range []struct {
		name   string
		steps  []buildStep
		cached bool
		want   string // in the complaint; "" for none
	}{
		{"cold, all built", []buildStep{meta, step("[one 2/2] RUN true", false), step("[stage-2 2/4] COPY --from=one /out/ /one/", false)}, false, ""},
		{"cached, all cached", []buildStep{meta, step("[one 2/2] RUN true", true), step("[stage-2 2/4] COPY --from=one /out/ /one/", true)}, true, ""},
		{"cold, one cached", []buildStep{step("[one 2/2] RUN true", false), step("[stage-2 2/4] COPY --from=one /out/ /one/", true)}, false, "was cached in a cold build"},
		{"cached, one built", []buildStep{step("[one 2/2] RUN true", true), step("[two 2/2] RUN false", false)}, true, `"[two 2/2] RUN false" was built again`},
		{"no RUN or COPY", []buildStep{meta}, true, "no RUN or COPY step"},
		{"failed", []buildStep{{Name: "[one 2/2] RUN false", Error: "exit code: 1"}}, false, "failed: exit code: 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkCached(tc.steps, tc.cached)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("checkCached = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBuildDerive(t *testing.T) {
	r := &Results{Build: Build{
		// buildx → hutch: informational.
		Hutch:           BuildSide{Cold: BuildSeries{Wall: Dist{Samples: []float64{1500, 1600, 1550}}}, Cached: BuildSeries{Wall: Dist{Samples: []float64{250, 230, 240}}}},
		BkctlHutch:      BuildSide{Cold: BuildSeries{Wall: Dist{Samples: []float64{1200, 1300, 1250}}}, Cached: BuildSeries{Wall: Dist{Samples: []float64{150, 130, 140}}}},
		Buildkitd:       BuildSide{Cold: BuildSeries{Wall: Dist{Samples: []float64{1000, 1000, 1000}}}, Cached: BuildSeries{Wall: Dist{Samples: []float64{100, 100, 100}}}},
		BuildxBuildkitd: BuildSide{Cached: BuildSeries{Wall: Dist{Samples: []float64{200, 200, 200}}}},
		IdleBefore:      MemSample{TreeRSS: 38 * 1024},
	}}
	r.derive()
	b := r.Build
	// The goal's ratios are bkctl → hutch's over buildctl → buildkitd's.
	if b.ColdRatio != 1.25 || b.CachedRatio != 1.4 {
		t.Errorf("goal ratios: cold %v, cached %v", b.ColdRatio, b.CachedRatio)
	}
	if b.BuildxColdRatio != 1.55 || b.BuildxCachedRatio != 2.4 || b.SameClientCachedRatio != 1.2 || b.SameClientColdRatio != 0 {
		t.Errorf("buildx ratios: over buildctl cold %v, cached %v; same client cold %v, cached %v",
			b.BuildxColdRatio, b.BuildxCachedRatio, b.SameClientColdRatio, b.SameClientCachedRatio)
	}
	if len(b.ColdPairRatios) != 3 || b.ColdPairRatios[0] != 1.2 || b.CachedPairRatios[1] != 1.3 {
		t.Errorf("pair ratios: cold %v, cached %v", b.ColdPairRatios, b.CachedPairRatios)
	}
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.What] = tg.Met
	}
	for what, want := range map[string]bool{
		"cold 3-stage build, bkctl → hutch vs buildctl → rootless buildkitd (median)": true,  // 1.25×
		"cached rebuild, bkctl → hutch vs buildctl → rootless buildkitd (median)":     false, // 1.4×
		"idle daemon tree RSS before the first build":                                 true,
	} {
		if got, ok := met[what]; !ok || got != want {
			t.Errorf("target %q: met %v (present %v), want %v", what, got, ok, want)
		}
	}
}
