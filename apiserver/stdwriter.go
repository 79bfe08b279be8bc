package apiserver

import (
	"encoding/binary"
	"io"
	"sync"

	"github.com/moby/moby/api/pkg/stdcopy"
)

// frameWriter multiplexes one stream onto a shared connection with Docker's
// 8-byte header: the stream (1 stdout, 2 stderr), three zero bytes and the
// payload length (big endian). The api module only ships the reader
// (stdcopy.StdCopy); the writer is the daemon's to provide.
type frameWriter struct {
	mu     *sync.Mutex // shared by the writers of one connection
	w      io.Writer
	stream stdcopy.StdType
}

func newFrameWriters(w io.Writer) (stdout, stderr io.Writer) {
	mu := &sync.Mutex{}
	return &frameWriter{mu: mu, w: w, stream: stdcopy.Stdout}, &frameWriter{mu: mu, w: w, stream: stdcopy.Stderr}
}

// maxFrame keeps frames within what clients expect (Docker's buffer is 32 KiB).
const maxFrame = 32 << 10

func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	written := 0
	for len(p) > 0 {
		chunk := p
		if len(chunk) > maxFrame {
			chunk = chunk[:maxFrame]
		}
		var hdr [8]byte
		hdr[0] = byte(f.stream)
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(chunk)))
		if _, err := f.w.Write(append(hdr[:], chunk...)); err != nil {
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}
