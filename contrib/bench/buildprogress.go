package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// timeBuild runs one build, checks that its steps were all built (cold)
// or all cached, and adds its times to s. It returns the build's output.
func timeBuild(s *BuildSeries, run func() ([]byte, error), cached bool, reg string) ([]byte, error) {
	t0 := time.Now()
	out, err := run()
	end := time.Now()
	if err != nil {
		return out, fmt.Errorf("%w\n%s", err, tail(out, 30))
	}
	steps := parseProgress(out, reg)
	if len(steps) == 0 {
		return out, fmt.Errorf("no build steps in the progress output\n%s", tail(out, 30))
	}
	if bad := checkCached(steps, cached); bad != "" {
		return out, fmt.Errorf("%s\n%s", bad, tail(out, 30))
	}
	first, lastEnd := steps[0].Start, steps[0].End
	for _, st := range steps {
		first = minTime(first, st.Start)
		if st.End.After(lastEnd) {
			lastEnd = st.End
		}
	}
	s.Wall.add(end.Sub(t0))
	s.ToFirst.add(first.Sub(t0))
	s.Steps.add(lastEnd.Sub(first))
	s.AfterLast.add(end.Sub(lastEnd))
	if s.perStep == nil {
		s.perStep = map[string]*Dist{}
	}
	for _, st := range steps {
		d := s.perStep[st.Name]
		if d == nil {
			d = &Dist{}
			s.perStep[st.Name] = d
			s.order = append(s.order, st.Name)
		}
		d.add(st.End.Sub(st.Start))
	}
	return out, nil
}

func (s *BuildSeries) stepMedians() []PhaseTime {
	var out []PhaseTime
	for _, n := range s.order {
		d := s.perStep[n]
		d.summarize()
		out = append(out, PhaseTime{Name: n, Median: d.Median, P95: d.P95})
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// buildStep is one vertex of a build as its progress reported it.
type buildStep struct {
	Name       string
	Start, End time.Time
	Cached     bool
	Error      string
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}`)

// parseProgress reads the vertices of BuildKit's rawjson progress (one
// SolveStatus per line; other lines are skipped), merged by digest: the
// earliest start, the latest end, in the order they first started. reg,
// the registry's address, is written REG in the names, and digests are
// left out, so that samples' names match. Vertices never started or never
// completed are left out.
func parseProgress(out []byte, reg string) []buildStep {
	type vertex struct {
		Digest    string     `json:"digest"`
		Name      string     `json:"name"`
		Started   *time.Time `json:"started"`
		Completed *time.Time `json:"completed"`
		Cached    bool       `json:"cached"`
		Error     string     `json:"error"`
	}
	byDigest := map[string]*buildStep{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var st struct {
			Vertexes []vertex `json:"vertexes"`
		}
		if json.Unmarshal(line, &st) != nil {
			continue
		}
		for _, v := range st.Vertexes {
			s := byDigest[v.Digest]
			if s == nil {
				s = &buildStep{}
				byDigest[v.Digest] = s
				order = append(order, v.Digest)
			}
			if v.Name != "" {
				s.Name = v.Name
			}
			if v.Started != nil && (s.Start.IsZero() || v.Started.Before(s.Start)) {
				s.Start = *v.Started
			}
			if v.Completed != nil && v.Completed.After(s.End) {
				s.End = *v.Completed
			}
			s.Cached = s.Cached || v.Cached
			if v.Error != "" {
				s.Error = v.Error
			}
		}
	}
	var steps []buildStep
	for _, d := range order {
		s := *byDigest[d]
		if s.Start.IsZero() || s.End.IsZero() {
			continue
		}
		if reg != "" {
			s.Name = strings.ReplaceAll(s.Name, reg, "REG")
		}
		s.Name = digestRE.ReplaceAllString(s.Name, "")
		steps = append(steps, s)
	}
	slices.SortStableFunc(steps, func(a, b buildStep) int { return a.Start.Compare(b.Start) })
	return steps
}

// stageStepRE matches the Dockerfile's RUN and COPY steps ("[one 2/2]
// RUN …", "[stage-2 3/4] COPY --from=…").
var stageStepRE = regexp.MustCompile(`^\[[^\]]+\] (RUN|COPY) `)

// checkCached says what is wrong with a build's steps ("" if nothing):
// a step that failed, a RUN or COPY step that was cached in a cold build
// or built in a cached one, or none of them shown.
func checkCached(steps []buildStep, cached bool) string {
	n := 0
	for _, s := range steps {
		if s.Error != "" {
			return fmt.Sprintf("step %q failed: %s", s.Name, s.Error)
		}
		if !stageStepRE.MatchString(s.Name) {
			continue
		}
		n++
		if s.Cached != cached {
			if cached {
				return fmt.Sprintf("step %q was built again in the cached rebuild", s.Name)
			}
			return fmt.Sprintf("step %q was cached in a cold build", s.Name)
		}
	}
	if n == 0 {
		return "no RUN or COPY step in the progress output"
	}
	return ""
}

// metadataDigest is the image digest a --metadata-file reports.
func metadataDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m["containerimage.digest"].(string)
	return s
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
