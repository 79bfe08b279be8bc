package storage

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
	"go.podman.io/image/v5/types"
)

func TestPushProgressSequences(t *testing.T) {
	a, b, c, cfg := fakeDigest('a'), fakeDigest('b'), fakeDigest('c'), fakeDigest('f')
	A, B, C := "aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"
	tests := []struct {
		name     string
		top      []plannedLayer // top first
		parallel int
		steps    func(p *pushProgress)
		want     []string
	}{{
		name:     "one layer pushed",
		top:      []plannedLayer{{digest: a, size: 1000}},
		parallel: 5,
		steps: func(p *pushProgress) {
			p.event(ev(types.ProgressEventNewArtifact, a, 0))
			p.event(ev(types.ProgressEventRead, a, 400))
			p.event(ev(types.ProgressEventRead, a, 400)) // no progress, no message
			p.event(ev(types.ProgressEventDone, a, 1000))
			p.event(ev(types.ProgressEventNewArtifact, cfg, 0))
			p.event(ev(types.ProgressEventDone, cfg, 300))
		},
		want: []string{A + ": Preparing", A + ": Pushing 400/1000", A + ": Pushing 1000/1000", A + ": Pushed"},
	}, {
		name:     "a layer the registry has, one beyond the uploads",
		top:      []plannedLayer{{digest: a, size: 10}, {digest: b, size: 20}, {digest: c, size: 30}},
		parallel: 2,
		steps: func(p *pushProgress) {
			p.event(ev(types.ProgressEventSkipped, c, 0))
			p.event(ev(types.ProgressEventRead, b, 20))
			p.event(ev(types.ProgressEventDone, b, 20))
			p.event(ev(types.ProgressEventDone, a, 10))
			p.event(ev(types.ProgressEventRead, a, 10)) // late: ignored
		},
		want: []string{A + ": Preparing", B + ": Preparing", C + ": Preparing", C + ": Waiting",
			C + ": Layer already exists", B + ": Pushing 20/20", B + ": Pushed", A + ": Pushing 10/10", A + ": Pushed"},
	}, {
		name:     "a layer twice in the image is announced once",
		top:      []plannedLayer{{digest: a, size: 10}, {digest: a, size: 10}},
		parallel: 5,
		steps:    func(p *pushProgress) { p.event(ev(types.ProgressEventSkipped, a, 0)) },
		want:     []string{A + ": Preparing", A + ": Layer already exists"},
	}, {
		name:     "a size the store did not know",
		top:      []plannedLayer{{digest: a, size: 0}},
		parallel: 5,
		steps: func(p *pushProgress) {
			p.event(ev(types.ProgressEventRead, a, 50))
			p.event(ev(types.ProgressEventDone, a, 50))
		},
		want: []string{A + ": Preparing", A + ": Pushing 50/0", A + ": Pushed"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			p := newPushProgress(r.emit)
			p.start(tc.top, tc.parallel)
			tc.steps(p)
			if !slices.Equal(r.lines, tc.want) {
				t.Errorf("stream:\n%s\nwant:\n%s", strings.Join(r.lines, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestPushProgressFinish(t *testing.T) {
	var msgs []jsonstream.Message
	p := newPushProgress(func(m jsonstream.Message) { msgs = append(msgs, m) })
	p.finish("v1", fakeDigest('d'), 528)
	if len(msgs) != 2 || msgs[0].Status != "v1: digest: "+fakeDigest('d').String()+" size: 528" || msgs[1].Aux == nil {
		t.Fatalf("messages %+v", msgs)
	}
	var aux struct {
		Tag, Digest string
		Size        int
	}
	if err := json.Unmarshal(*msgs[1].Aux, &aux); err != nil || aux.Tag != "v1" || aux.Digest != fakeDigest('d').String() || aux.Size != 528 {
		t.Errorf("aux %s: %+v, %v", *msgs[1].Aux, aux, err)
	}
}
