package storage

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/types"
)

// fakeDigest returns a digest whose short id starts with c repeated.
func fakeDigest(c byte) digest.Digest {
	return digest.Digest("sha256:" + strings.Repeat(string(c), 64))
}

// line renders a message compactly for comparisons.
func line(m jsonstream.Message) string {
	s := m.Status
	if m.ID != "" {
		s = m.ID + ": " + s
	}
	if m.Progress != nil && (m.Progress.Current != 0 || m.Progress.Total != 0) {
		s += fmt.Sprintf(" %d/%d", m.Progress.Current, m.Progress.Total)
	}
	return s
}

type recorder struct{ lines []string }

func (r *recorder) emit(m jsonstream.Message) { r.lines = append(r.lines, line(m)) }

func ev(e types.ProgressEvent, d digest.Digest, offset uint64) types.ProgressProperties {
	return types.ProgressProperties{Event: e, Artifact: types.BlobInfo{Digest: d}, Offset: offset}
}

func TestPullProgressSequences(t *testing.T) {
	a, b, c, d, e, cfg := fakeDigest('a'), fakeDigest('b'), fakeDigest('c'), fakeDigest('d'), fakeDigest('e'), fakeDigest('f')
	A, B, C, D, E := "aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd", "eeeeeeeeeeee"
	tests := []struct {
		name   string
		ref    string
		layers []plannedLayer
		quiet  bool
		steps  func(p *pullProgress)
		newer  bool
		want   []string
	}{{
		name:   "one layer, Done before extraction",
		ref:    "busybox",
		layers: []plannedLayer{{digest: a, size: 1000}},
		steps: func(p *pullProgress) {
			p.event(ev(types.ProgressEventNewArtifact, cfg, 0))
			p.event(ev(types.ProgressEventDone, cfg, 0))
			p.event(ev(types.ProgressEventNewArtifact, a, 0))
			p.event(ev(types.ProgressEventRead, a, 400))
			p.event(ev(types.ProgressEventRead, a, 1000))
			p.event(ev(types.ProgressEventDone, a, 1000))
			p.extractStart(a)
			p.extracting(a, 500)
			p.extractDone(a, true)
		},
		newer: true,
		want: []string{
			"latest: Pulling from library/busybox",
			A + ": Pulling fs layer",
			A + ": Downloading 400/1000",
			A + ": Downloading 1000/1000",
			A + ": Verifying Checksum",
			A + ": Download complete",
			A + ": Extracting 500/1000",
			A + ": Extracting 1000/1000",
			A + ": Pull complete",
			"Digest: " + testDigest,
			"Status: Downloaded newer image for busybox:latest",
		},
	}, {
		name:   "extraction starts before the queued Done and Read events",
		ref:    "busybox:1.36",
		layers: []plannedLayer{{digest: a, size: 1000}},
		steps: func(p *pullProgress) {
			p.event(ev(types.ProgressEventRead, a, 300))
			p.extractStart(a)
			p.event(ev(types.ProgressEventRead, a, 600))
			p.event(ev(types.ProgressEventDone, a, 1000))
			p.extractDone(a, true)
		},
		newer: true,
		want: []string{
			"1.36: Pulling from library/busybox",
			A + ": Pulling fs layer",
			A + ": Downloading 300/1000",
			A + ": Downloading 1000/1000",
			A + ": Verifying Checksum",
			A + ": Download complete",
			A + ": Extracting 1000/1000",
			A + ": Pull complete",
			"Digest: " + testDigest,
			"Status: Downloaded newer image for busybox:1.36",
		},
	}, {
		name: "existing base, waiting beyond the parallel downloads, skipped blob",
		ref:  "127.0.0.1:5000/team/app:v1",
		layers: []plannedLayer{
			{digest: a, size: 10, exists: true},
			{digest: b, size: 20}, {digest: c, size: 30}, {digest: d, size: 40}, {digest: e, size: 50},
			{digest: b, size: 20}, // the same blob twice is one line
		},
		steps: func(p *pullProgress) {
			p.event(ev(types.ProgressEventSkipped, a, 0)) // already announced
			p.event(ev(types.ProgressEventSkipped, c, 0))
			p.event(ev(types.ProgressEventRead, d, 40))
			p.event(ev(types.ProgressEventDone, d, 40))
			p.extractStart(b) // Done for b not seen yet, no bytes either
			p.extractDone(b, true)
			p.extractStart(a) // reused layers are never extracted again
			p.extractStart(d)
			p.extractDone(d, true)
			p.extractStart(e)
			p.extractDone(e, false) // failure: the error ends the stream
		},
		newer: true,
		want: []string{
			"v1: Pulling from team/app",
			A + ": Already exists",
			B + ": Pulling fs layer",
			C + ": Pulling fs layer",
			D + ": Pulling fs layer",
			E + ": Pulling fs layer",
			D + ": Waiting",
			E + ": Waiting",
			C + ": Already exists",
			D + ": Downloading 40/40",
			D + ": Verifying Checksum",
			D + ": Download complete",
			B + ": Downloading 20/20",
			B + ": Verifying Checksum",
			B + ": Download complete",
			B + ": Extracting 20/20",
			B + ": Pull complete",
			D + ": Extracting 40/40",
			D + ": Pull complete",
			E + ": Downloading 50/50",
			E + ": Verifying Checksum",
			E + ": Download complete",
			"Digest: " + testDigest,
			"Status: Downloaded newer image for 127.0.0.1:5000/team/app:v1",
		},
	}, {
		name:   "image already stored: no layer lines",
		ref:    "busybox@" + testDigest,
		layers: []plannedLayer{{digest: a, size: 10}},
		quiet:  true,
		steps: func(p *pullProgress) {
			p.event(ev(types.ProgressEventSkipped, a, 0))
			p.extractStart(a)
			p.extractDone(a, true)
		},
		newer: false,
		want: []string{
			"docker.io/library/busybox@" + testDigest + ": Pulling from library/busybox",
			"Digest: " + testDigest,
			"Status: Image is up to date for busybox@" + testDigest,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			named, err := parsePullReference(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			var r recorder
			p := newPullProgress(r.emit)
			p.start(named, tt.layers, 2, tt.quiet)
			tt.steps(p)
			p.finish(testDigest, named, tt.newer)
			if got, want := strings.Join(r.lines, "\n"), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("messages:\n%s\n\nwant:\n%s", got, want)
			}
		})
	}
}

// TestPullProgressMessageShape pins the JSON fields: layer statuses carry an
// empty progressDetail as Docker's do, "Pulling from" and the final lines none.
func TestPullProgressMessageShape(t *testing.T) {
	var msgs []jsonstream.Message
	p := newPullProgress(func(m jsonstream.Message) { msgs = append(msgs, m) })
	named, _ := parsePullReference("busybox")
	a := fakeDigest('a')
	p.start(named, []plannedLayer{{digest: a, size: 10}}, 3, false)
	p.event(ev(types.ProgressEventRead, a, 5))
	p.finish(testDigest, named, true)
	want := []struct {
		status      string
		withDetail  bool
		current, id bool
	}{
		{"Pulling from library/busybox", false, false, true},
		{"Pulling fs layer", true, false, true},
		{"Downloading", true, true, true},
		{"Digest: " + testDigest, false, false, false},
		{"Status: Downloaded newer image for busybox:latest", false, false, false},
	}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d: %v", len(msgs), len(want), msgs)
	}
	for i, w := range want {
		m := msgs[i]
		if m.Status != w.status || (m.Progress != nil) != w.withDetail || (m.ID != "") != w.id ||
			(m.Progress != nil && (m.Progress.Current != 0) != w.current) {
			t.Errorf("message %d = %+v, want status %q detail=%v current=%v id=%v", i, m, w.status, w.withDetail, w.current, w.id)
		}
	}
}

func TestExtractReaderReportsEnd(t *testing.T) {
	var r recorder
	p := newPullProgress(r.emit)
	named, _ := parsePullReference("busybox")
	a := fakeDigest('a')
	p.start(named, []plannedLayer{{digest: a, size: 3000}}, 3, false)
	total, ok := p.extractStart(a)
	if !ok || total != 3000 {
		t.Fatalf("extractStart = %d, %v", total, ok)
	}
	x := &progressReader{r: strings.NewReader(strings.Repeat("x", 3000)), total: total, report: func(n int64) { p.extracting(a, n) }}
	if _, err := io.Copy(io.Discard, x); err != nil {
		t.Fatal(err)
	}
	p.extractDone(a, true)
	last := r.lines[len(r.lines)-2:]
	if last[0] != "aaaaaaaaaaaa: Extracting 3000/3000" || last[1] != "aaaaaaaaaaaa: Pull complete" {
		t.Errorf("last lines %q", last)
	}
}

// TestPullProgressClosed: after the pull returned, a decompressor that is
// still reading ahead reports into nothing (it used to write the finished
// HTTP response and crash the daemon).
func TestPullProgressClosed(t *testing.T) {
	var msgs []jsonstream.Message
	p := newPullProgress(func(m jsonstream.Message) { msgs = append(msgs, m) })
	named, _ := parsePullReference("busybox")
	a := fakeDigest('a')
	p.start(named, []plannedLayer{{digest: a, size: 10}}, 3, false)
	n := len(msgs)
	p.close()
	p.fetchRead(a, 5)
	p.fetched(a)
	if len(msgs) != n {
		t.Errorf("messages after close: %v", msgs[n:])
	}
}
