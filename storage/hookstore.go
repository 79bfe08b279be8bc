package storage

import (
	"errors"
	"io"
	"sync"

	"github.com/opencontainers/go-digest"
	cstorage "go.podman.io/storage"
)

// hookedStore is the store as one pull's containers-storage destination sees
// it. containers/image reports download progress but not extraction, and it
// commits a layer inside PutBlob, before the blob's Done event: watching
// PutLayer is the only way to send "Extracting" and "Pull complete" when they
// happen, and to know which layers a failed pull created.
type hookedStore struct {
	cstorage.Store
	progress *pullProgress // nil: no progress to report (import, load)
	locks    *keyedLocks   // the store's layer ID locks
	// stage makes a read-only layer in this process (putstaged_linux.go);
	// nil, or handled false: the library's PutLayer.
	stage func(id, parent string, opts *cstorage.LayerOptions, diff io.Reader) (*cstorage.Layer, int64, bool, error)

	mu      sync.Mutex
	created []string // layer IDs created by this pull, in order
}

// PutLayer wraps the library's PutLayer. c/image passes the compressed blob
// digest as OriginalDigest when it applies a blob it downloaded.
func (h *hookedStore) PutLayer(id, parent string, names []string, mountLabel string, writeable bool, options *cstorage.LayerOptions, diff io.Reader) (*cstorage.Layer, int64, error) {
	var blob digest.Digest
	if options != nil {
		blob = options.OriginalDigest
	}
	tracked := false
	if h.progress != nil && diff != nil && blob != "" {
		if total, ok := h.progress.extractStart(blob); ok {
			tracked = true
			diff = &progressReader{r: diff, total: total, report: func(n int64) { h.progress.extracting(blob, n) }}
		}
	}
	if id != "" && h.locks != nil {
		defer h.locks.lock(id)()
	}
	var layer *cstorage.Layer
	var n int64
	var err error
	handled := false
	if h.stage != nil && diff != nil && !writeable && len(names) == 0 && mountLabel == "" {
		layer, n, handled, err = h.stage(id, parent, options, diff)
	}
	if !handled {
		layer, n, err = h.Store.PutLayer(id, parent, names, mountLabel, writeable, options, diff)
	}
	if err == nil && layer != nil {
		h.noteCreated(layer.ID)
	}
	if tracked {
		// A concurrent pull committing the same layer first is success too.
		h.progress.extractDone(blob, err == nil || errors.Is(err, cstorage.ErrDuplicateID))
	}
	return layer, n, err
}

// noteCreated records a layer this pull created.
func (h *hookedStore) noteCreated(id string) {
	h.mu.Lock()
	h.created = append(h.created, id)
	h.mu.Unlock()
}

func (h *hookedStore) createdLayers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.created...)
}
