package storage

import (
	"io"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"go.podman.io/image/v5/types"
)

// layerState is where one layer is in Docker's message sequence; a layer
// only moves forward, so late or reordered events are dropped.
type layerState uint8

const (
	layerPending     layerState = iota // "Pulling fs layer" (maybe "Waiting") sent
	layerDownloading                   // "Downloading" sent at least once
	layerDownloaded                    // "Verifying Checksum", "Download complete" sent
	layerExtracting                    // "Extracting" under way
	layerDone                          // "Pull complete" sent
	layerExists                        // "Already exists" sent
)

type layerEntry struct {
	id    string // first 12 hex digits of the blob digest, Docker's layer id
	size  int64
	state layerState
	sent  int64 // last "Downloading" current
	xsent int64 // last "Extracting" current
}

// plannedLayer is one layer blob of the manifest being pulled.
type plannedLayer struct {
	digest digest.Digest
	size   int64
	exists bool // already in the store on top of the same parents
}

// pullProgress turns containers/image progress events, the fetcher's reads
// and the layer commits seen by hookedStore into Docker's pull stream. Messages are emitted under
// one lock, so emit is never called concurrently and sees a total order.
type pullProgress struct {
	mu     sync.Mutex
	emit   func(jsonstream.Message)
	layers map[digest.Digest]*layerEntry
	quiet  bool
}

func newPullProgress(emit func(jsonstream.Message)) *pullProgress {
	if emit == nil {
		emit = func(jsonstream.Message) {}
	}
	return &pullProgress{emit: emit, layers: map[digest.Digest]*layerEntry{}}
}

// close drops every message from now on.
func (p *pullProgress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit = func(jsonstream.Message) {}
}

func shortID(d digest.Digest) string {
	e := d.Encoded()
	if len(e) > 12 {
		return e[:12]
	}
	return e
}

func status(id, s string) jsonstream.Message {
	return jsonstream.Message{ID: id, Status: s, Progress: &jsonstream.Progress{}}
}

// start sends "Pulling from" and announces the layers in manifest order:
// "Already exists" for the ones present, "Pulling fs layer" for the others,
// then "Waiting" for those beyond the first `parallel` downloads. With quiet
// set (the image itself is already stored) Docker shows no layer at all.
func (p *pullProgress) start(named reference.Named, layers []plannedLayer, parallel int, quiet bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quiet = quiet
	p.emit(jsonstream.Message{ID: tagOrDigest(named), Status: "Pulling from " + repoPath(named)})
	if quiet {
		return
	}
	var waiting []*layerEntry
	downloads := 0
	for _, l := range layers {
		if _, dup := p.layers[l.digest]; dup {
			continue
		}
		e := &layerEntry{id: shortID(l.digest), size: l.size}
		p.layers[l.digest] = e
		if l.exists {
			e.state = layerExists
			p.emit(status(e.id, "Already exists"))
			continue
		}
		p.emit(status(e.id, "Pulling fs layer"))
		if downloads >= parallel {
			waiting = append(waiting, e)
		}
		downloads++
	}
	for _, e := range waiting {
		p.emit(status(e.id, "Waiting"))
	}
}

// event handles one containers/image progress event. Events for blobs that
// are not layers of the plan (the config) are ignored.
func (p *pullProgress) event(ev types.ProgressProperties) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.layers[ev.Artifact.Digest]
	if p.quiet || e == nil || e.state >= layerDownloaded {
		return
	}
	switch ev.Event {
	case types.ProgressEventRead:
		p.downloading(e, int64(ev.Offset))
	case types.ProgressEventDone:
		p.downloaded(e)
	case types.ProgressEventSkipped:
		e.state = layerExists
		p.emit(status(e.id, "Already exists"))
	}
}

func (p *pullProgress) downloading(e *layerEntry, current int64) {
	if current <= e.sent {
		return
	}
	e.state = layerDownloading
	e.sent = current
	p.emit(jsonstream.Message{ID: e.id, Status: "Downloading", Progress: &jsonstream.Progress{Current: current, Total: e.size}})
}

// downloaded ends the download phase, first completing the bar as Docker's
// progress reader does at EOF.
func (p *pullProgress) downloaded(e *layerEntry) {
	if e.size > 0 && e.sent < e.size {
		p.downloading(e, e.size)
	}
	e.state = layerDownloaded
	p.emit(status(e.id, "Verifying Checksum"))
	p.emit(status(e.id, "Download complete"))
}

// extractStart is called when the store starts applying the blob. The blob
// is complete on disk by then, even if its Done event is still queued.
func (p *pullProgress) extractStart(d digest.Digest) (total int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.layers[d]
	if p.quiet || e == nil || e.state >= layerExtracting {
		return 0, false
	}
	if e.state < layerDownloaded {
		p.downloaded(e)
	}
	e.state = layerExtracting
	return e.size, true
}

func (p *pullProgress) extracting(d digest.Digest, current int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.layers[d]
	if e == nil || e.state != layerExtracting || current <= e.xsent {
		return
	}
	e.xsent = current
	p.emit(jsonstream.Message{ID: e.id, Status: "Extracting", Progress: &jsonstream.Progress{Current: current, Total: e.size}})
}

// extractDone ends a layer. A failed extraction sends nothing: the pull's
// error ends the stream.
func (p *pullProgress) extractDone(d digest.Digest, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.layers[d]
	if e == nil || e.state != layerExtracting || !ok {
		return
	}
	if e.size > 0 && e.xsent < e.size {
		e.xsent = e.size
		p.emit(jsonstream.Message{ID: e.id, Status: "Extracting", Progress: &jsonstream.Progress{Current: e.size, Total: e.size}})
	}
	e.state = layerDone
	p.emit(status(e.id, "Pull complete"))
}

// finish sends the closing lines of a successful pull.
func (p *pullProgress) finish(manifestDigest digest.Digest, named reference.Named, newer bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(jsonstream.Message{Status: "Digest: " + manifestDigest.String()})
	verb := "Status: Image is up to date for "
	if newer {
		verb = "Status: Downloaded newer image for "
	}
	p.emit(jsonstream.Message{Status: verb + reference.FamiliarString(named)})
}

// progressReader reports how much of a blob was read with the cadence of
// Docker's progress reader: every 1% (at most every 512 KiB), at most every
// 100 ms, and at the end. It reports bytes downloaded while fetching and
// compressed bytes consumed while extracting, as Docker does.
type progressReader struct {
	r        io.Reader
	total    int64
	report   func(current int64)
	current  int64
	last     int64
	lastSent time.Time
}

func (x *progressReader) Read(b []byte) (int, error) {
	n, err := x.r.Read(b)
	x.current += int64(n)
	step := int64(512 << 10)
	if inc := x.total / 100; x.total > 0 && inc < step {
		step = inc
	}
	if x.current-x.last > step || err != nil {
		x.last = x.current
		if err != nil || x.current == x.total || time.Since(x.lastSent) >= 100*time.Millisecond {
			x.lastSent = time.Now()
			x.report(x.current)
		}
	}
	return n, err
}

// fetchRead reports bytes of a layer blob downloaded by hutch's own fetcher.
func (p *pullProgress) fetchRead(d digest.Digest, current int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.layers[d]; !p.quiet && e != nil && e.state < layerDownloaded {
		p.downloading(e, current)
	}
}

// fetched reports a layer blob downloaded and verified.
func (p *pullProgress) fetched(d digest.Digest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.layers[d]; !p.quiet && e != nil && e.state < layerDownloaded {
		p.downloaded(e)
	}
}
