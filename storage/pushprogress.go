package storage

import (
	"fmt"
	"sync"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/types"
)

// pushProgress turns containers/image's progress events of a push into
// Docker's push stream. Layers are named as Docker names them, by the
// first 12 hex digits of their uncompressed digest, which is also the
// digest containers/image reports for blobs read from the store. Messages
// are emitted under one lock, in a total order.
type pushProgress struct {
	mu     sync.Mutex
	emit   func(jsonstream.Message)
	layers map[digest.Digest]*pushLayer
}

type pushLayer struct {
	id   string
	size int64
	sent int64 // last "Pushing" current
	done bool  // "Pushed" or "Layer already exists" sent
}

func newPushProgress(emit func(jsonstream.Message)) *pushProgress {
	if emit == nil {
		emit = func(jsonstream.Message) {}
	}
	return &pushProgress{emit: emit, layers: map[digest.Digest]*pushLayer{}}
}

// start announces the layers, top first as Docker lists them: "Preparing"
// for each, then "Waiting" for those beyond the first parallel uploads.
func (p *pushProgress) start(top []plannedLayer, parallel int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var waiting []*pushLayer
	for _, l := range top {
		if _, dup := p.layers[l.digest]; dup {
			continue
		}
		e := &pushLayer{id: shortID(l.digest), size: l.size}
		p.layers[l.digest] = e
		p.emit(status(e.id, "Preparing"))
		if len(p.layers) > parallel {
			waiting = append(waiting, e)
		}
	}
	for _, e := range waiting {
		p.emit(status(e.id, "Waiting"))
	}
}

// event handles one containers/image event; the config blob and unknown
// blobs are not layers of the stream.
func (p *pushProgress) event(ev types.ProgressProperties) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.layers[ev.Artifact.Digest]
	if e == nil || e.done {
		return
	}
	switch ev.Event {
	case types.ProgressEventRead:
		p.pushing(e, int64(ev.Offset))
	case types.ProgressEventDone:
		if e.size > 0 && e.sent < e.size {
			p.pushing(e, e.size)
		}
		e.done = true
		p.emit(status(e.id, "Pushed"))
	case types.ProgressEventSkipped:
		e.done = true
		p.emit(status(e.id, "Layer already exists"))
	}
}

func (p *pushProgress) pushing(e *pushLayer, current int64) {
	if current <= e.sent {
		return
	}
	e.sent = current
	total := e.size
	if total > 0 && current > total {
		total = 0 // a size the store did not know exactly: show bytes only
	}
	p.emit(jsonstream.Message{ID: e.id, Status: "Pushing", Progress: &jsonstream.Progress{Current: current, Total: total}})
}

// finish sends Docker's closing lines: "<tag>: digest: <digest> size:
// <manifest bytes>" and the same facts as aux data.
func (p *pushProgress) finish(tag string, d digest.Digest, size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(jsonstream.Message{Status: fmt.Sprintf("%s: digest: %s size: %d", tag, d, size)})
	p.emit(jsonstream.Message{Progress: &jsonstream.Progress{}, Aux: auxMessage(pushAux{Tag: tag, Digest: d.String(), Size: size})})
}
