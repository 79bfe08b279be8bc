package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"go.podman.io/storage/pkg/archive"
)

// Layer blobs are gzip in nearly every registry, and a pull is CPU-bound:
// on two cores the decompressor, the parser and the kernel's file writes
// share them. Go's inflate (klauspost's, through pgzip) takes 0.38 s of
// CPU for the 137 MB of the bench's large layer, Debian's gzip 0.58 s,
// igzip (Intel's ISA-L, Debian's isal package) 0.11 s. So gzip layers
// are decompressed by an igzip process when one is installed, as Docker
// and containerd hand them to unpigz; otherwise, and for other
// compressions, in Go. HUTCH_IGZIP=0 turns igzip off.

// igzipPath is the igzip the engine uses, or "" for none.
var igzipPath = sync.OnceValue(func() string {
	if os.Getenv("HUTCH_IGZIP") == "0" {
		return ""
	}
	p, err := exec.LookPath("igzip")
	if err != nil {
		return ""
	}
	return p
})

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// decompressLayer returns the uncompressed stream of a layer blob read
// from r. Closing it before its end stops the decompression; it does not
// wait for r.
func decompressLayer(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(gzipMagic)) // a short or failing stream is DecompressStream's to report
	if p := igzipPath(); p != "" && bytes.Equal(head, gzipMagic) {
		return startGunzip(p, br)
	}
	return archive.DecompressStream(br)
}

// gunzipProcess reads the output of an igzip process.
type gunzipProcess struct {
	cmd    *exec.Cmd
	out    io.ReadCloser
	stderr *tailBuffer

	kill    sync.Once
	waited  sync.Once
	waitErr error
}

func startGunzip(path string, in io.Reader) (*gunzipProcess, error) {
	g := &gunzipProcess{cmd: exec.Command(path, "-d", "-c"), stderr: &tailBuffer{max: 4096}}
	g.cmd.Stdin = in
	g.cmd.Stderr = g.stderr
	out, err := g.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	g.out = out
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return g, nil
}

// Read returns the decompressed bytes and, at their end, the process's
// failure if it failed (a corrupt or truncated stream).
func (g *gunzipProcess) Read(p []byte) (int, error) {
	n, err := g.out.Read(p)
	if errors.Is(err, io.EOF) {
		if werr := g.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// Close ends the process if it still runs. Like the end of a read, it
// waits for the copy of the input, which ends at the input's next read.
func (g *gunzipProcess) Close() error {
	g.kill.Do(func() { _ = g.cmd.Process.Kill() }) // nothing if it has ended
	if err := g.wait(); err != nil && !isKilled(err) {
		return err
	}
	return nil
}

func (g *gunzipProcess) wait() error {
	g.waited.Do(func() {
		err := g.cmd.Wait()
		msg := strings.TrimSpace(g.stderr.String())
		msg = strings.ReplaceAll(strings.TrimPrefix(msg, "igzip: "), " (null)", "") // it names stdin (null)
		switch {
		case err == nil:
		case strings.Contains(msg, "does not contain a complete gzip file"):
			// A truncated blob, as Go's reader reports it.
			err = fmt.Errorf("decompressing: %w (igzip: %s; %w)", io.ErrUnexpectedEOF, msg, err)
		case msg != "":
			err = fmt.Errorf("decompressing: igzip: %s: %w", msg, err)
		}
		g.waitErr = err
	})
	return g.waitErr
}

func isKilled(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
