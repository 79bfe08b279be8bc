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
	"syscall"

	"go.podman.io/storage/pkg/archive"
)

// Layer blobs are gzip in nearly every registry, and a pull is CPU-bound:
// on two cores the decompressor, the parser and the kernel's file writes
// share them. For the 137 MB of the bench's large layer, Go's inflate
// (klauspost's) takes 0.38 s, 0.7-0.8 s of CPU through pgzip's read-ahead,
// Debian's gzip 0.58 s, igzip (Intel's ISA-L, Debian's isal package)
// 0.11 s. So gzip layers
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
// from r. Closing it before its end stops the decompression, and returns
// when a read of r under way does.
func decompressLayer(r io.Reader) (io.ReadCloser, error) {
	return decompressWith(igzipPath(), r)
}

// decompressWith hands a gzip stream to the igzip at path, if not "".
func decompressWith(path string, r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(gzipMagic)) // a short or failing stream is DecompressStream's to report
	if path != "" && bytes.Equal(head, gzipMagic) {
		if g, err := startGunzip(path, br); err == nil {
			return g, nil
		}
		// igzip went away since the engine looked for it: nothing of
		// the stream was read, Go decompresses it.
	}
	return archive.DecompressStream(br)
}

// gunzipProcess reads the output of an igzip process.
type gunzipProcess struct {
	cmd    *exec.Cmd
	out    io.ReadCloser
	buf    *bufio.Reader // of out, through readPipe
	stderr *tailBuffer
	copied chan error // the copy of the input into the process's stdin
	// bigPipes: the process holds a slot of bigPipes (its pipes grew).
	bigPipes bool

	kill    sync.Once
	waited  sync.Once
	killed  bool  // the process ended by Close's signal
	waitErr error // the stream's failure, if any
}

// pipeSize is the capacity asked for igzip's pipes. igzip reads its input
// and writes its output in blocks of about 1 MB. With 64 KiB pipes (Linux's
// default) it waited for each block of input while the extraction waited
// for its output: 281 ms of a 1 s pull in a trace. 1 MiB is what a user
// may ask (fs.pipe-max-size); where the kernel refuses, the pipes stay as
// they are.
const pipeSize = 1 << 20

// bigPipes bounds the igzip processes with grown pipes at once (3 per
// pull). The kernel counts pipe buffers per user: past
// fs.pipe-user-pages-soft (64 MiB by default) every new pipe of the user,
// containers' included, gets two pages. 8 processes hold 16 MiB; the
// others keep the default pipes, and are only slower.
var bigPipes = make(chan struct{}, 8)

func startGunzip(path string, in io.Reader) (*gunzipProcess, error) {
	g := &gunzipProcess{cmd: exec.Command(path, "-d", "-c"), stderr: &tailBuffer{max: 4096}, copied: make(chan error, 1)}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	g.cmd.Stdin = inR
	g.cmd.Stderr = g.stderr
	out, err := g.cmd.StdoutPipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	g.out = out
	g.buf = bufio.NewReaderSize(readPipe{g}, 256<<10)
	select {
	case bigPipes <- struct{}{}:
		g.bigPipes = true
		growPipe(inW)
		growPipe(out)
	default:
	}
	err = g.cmd.Start()
	inR.Close()
	if err != nil {
		inW.Close()
		g.releasePipes()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		_, err := io.Copy(inW, in)
		inW.Close()
		g.copied <- err
	}()
	return g, nil
}

// Read returns the decompressed bytes and, at their end, the process's
// failure if it failed (a corrupt or truncated stream).
func (g *gunzipProcess) Read(p []byte) (int, error) {
	return g.buf.Read(p)
}

// readPipe reads igzip's output from the pipe, under a buffer: the tar
// parser reads a header, a file's content and its padding apart, which
// would be three reads of the pipe per file.
type readPipe struct{ g *gunzipProcess }

func (r readPipe) Read(p []byte) (int, error) {
	g := r.g
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
	if err := g.wait(); err != nil && !g.killed {
		return err
	}
	return nil
}

// wait waits for the process and for the copy of its input, which ends
// at the input's end or next read after the process ended.
func (g *gunzipProcess) wait() error {
	g.waited.Do(func() {
		err := g.cmd.Wait()
		cerr := <-g.copied
		g.releasePipes() // closed by now
		g.killed = isKilled(err)
		msg := strings.TrimSpace(g.stderr.String())
		msg = strings.ReplaceAll(strings.TrimPrefix(msg, "igzip: "), " (null)", "") // it names stdin (null)
		switch {
		case err == nil:
			// Bytes after the last member igzip did not read: the caller
			// reads them for the digest.
		case cerr != nil && !errors.Is(cerr, syscall.EPIPE):
			// The download failed: igzip's complaint is a consequence.
			err = cerr
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

func (g *gunzipProcess) releasePipes() {
	if g.bigPipes {
		g.bigPipes = false
		<-bigPipes
	}
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
