// Package jsonlog reads and writes Docker's json-file container logs: the
// shim writes them (with max-size/max-file rotation), the engine reads them
// for docker logs (tail, since/until, follow across rotation).
package jsonlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/internal/tinyjson"
)

// Docker's json-file log: one JSON object per line,
//
//	{"log":"hello\n","stream":"stdout","time":"2026-01-02T03:04:05.123456789Z"}
//
// with the container's attributes, when its log options ask for some
// (labels, env), between stream and time: "attrs":{"key":"value"}.
//
// A message is a line including its "\n"; a line longer than maxLogLine is
// cut into several messages, and output that ends without a newline is
// flushed as a last message when the stream closes, as Docker's copier does.
const maxLogLine = 16 * 1024

// Writer appends json-file entries to one file for several streams.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string
	size int64
	rot  Rotation
	buf  []byte
	now  func() time.Time
	// attrs is the encoded attrs member with its comma, or nil.
	attrs []byte
	// compress gzips a rotated file p to p.gz (Rotation.Compress).
	compress func(p string)
	// zip counts the compressions of rotated files under way.
	zip sync.WaitGroup
}

// Rotation is Docker's json-file max-size, max-file and compress: once
// the log would grow past MaxSize bytes it is renamed to path.1 (path.1 to
// path.2, …, keeping MaxFiles files in all) and a new one is started.
// MaxSize 0 means no rotation; MaxFiles below 2 means the log is truncated
// instead. Compress gzips each rotated file to path.N.gz.
type Rotation struct {
	MaxSize  int64 `json:"maxSize,omitempty"`
	MaxFiles int   `json:"maxFiles,omitempty"`
	Compress bool  `json:"compress,omitempty"`
}

// OpenWriter opens (appending to) the json-file log at path.
func OpenWriter(path string, rot Rotation) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Writer{f: f, path: path, size: st.Size(), rot: rot, now: time.Now}, nil
}

// SetAttrs gives every line written from now on the attributes attrs
// (none when empty).
func (w *Writer) SetAttrs(attrs map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attrs = nil
	if len(attrs) > 0 {
		w.attrs = tinyjson.AppendStringMap([]byte(`,"attrs":`), attrs)
	}
}

// rotate moves the full log aside (or truncates it) and starts a new one.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return err
	}
	if w.rot.MaxFiles > 1 {
		// The last rotated file is compressed before it moves on.
		w.zip.Wait()
		ext := ""
		if w.rot.Compress {
			ext = gzExt
		}
		os.Remove(rotatedName(w.path, w.rot.MaxFiles-1) + ext)
		for i := w.rot.MaxFiles - 2; i >= 1; i-- {
			os.Rename(rotatedName(w.path, i)+ext, rotatedName(w.path, i+1)+ext)
		}
		first := rotatedName(w.path, 1)
		if err := os.Rename(w.path, first); err != nil {
			return err
		}
		if w.rot.Compress && w.compress != nil {
			w.zip.Add(1)
			go func() {
				defer w.zip.Done()
				w.compress(first)
			}()
		}
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	return nil
}

func rotatedName(path string, i int) string { return path + "." + strconv.Itoa(i) }

// CompressWith sets how rotated files are compressed when the rotation
// asks for it: compress replaces p by p.gz, or leaves p if it cannot (the
// shim runs gzip rather than link a compressor into every shim). Without
// it rotated files stay as they are; readers take either.
func (w *Writer) CompressWith(compress func(p string)) { w.compress = compress }

// Close closes the file once a compression under way is done; streams
// must be closed first.
func (w *Writer) Close() error {
	w.zip.Wait()
	return w.f.Close()
}

// Stream returns a writer that splits its input into messages of stream
// ("stdout" or "stderr"). Close flushes a trailing partial line.
func (w *Writer) Stream(stream string) io.WriteCloser {
	return &logStream{w: w, stream: stream}
}

func (w *Writer) emit(stream string, msg []byte) error {
	t := w.now().UTC()
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf[:0]
	b = append(b, `{"log":`...)
	b = appendJSONString(b, msg)
	b = append(b, `,"stream":"`...)
	b = append(b, stream...)
	b = append(b, '"')
	b = append(b, w.attrs...)
	b = append(b, `,"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, "\"}\n"...)
	w.buf = b
	if w.rot.MaxSize > 0 && w.size > 0 && w.size+int64(len(b)) > w.rot.MaxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(b)
	w.size += int64(n)
	return err
}

func appendJSONString(b, s []byte) []byte {
	// encoding/json's escaping (including its HTML-safe \u003c forms, which
	// Docker's files also contain) and replacement of invalid UTF-8.
	return tinyjson.AppendString(b, s)
}

type logStream struct {
	w       *Writer
	stream  string
	partial []byte
}

func (s *logStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxLogLine - len(s.partial)
			if len(p) < room {
				s.partial = append(s.partial, p...)
				return n, nil
			}
			s.partial = append(s.partial, p[:room]...)
			p = p[room:]
			if err := s.flush(); err != nil {
				return n, err
			}
			continue
		}
		line := p[:i+1]
		p = p[i+1:]
		if len(s.partial) > 0 || len(line) > maxLogLine {
			s.partial = append(s.partial, line...)
			for len(s.partial) > maxLogLine {
				if err := s.w.emit(s.stream, s.partial[:maxLogLine]); err != nil {
					return n, err
				}
				s.partial = append(s.partial[:0], s.partial[maxLogLine:]...)
			}
			if err := s.flush(); err != nil {
				return n, err
			}
			continue
		}
		if err := s.w.emit(s.stream, line); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *logStream) flush() error {
	if len(s.partial) == 0 {
		return nil
	}
	err := s.w.emit(s.stream, s.partial)
	s.partial = s.partial[:0]
	return err
}

func (s *logStream) Close() error { return s.flush() }

// Entry is one message of a json-file log. Line keeps its "\n".
type Entry struct {
	Stream string
	Time   time.Time
	Line   []byte
	// Attrs are the line's attributes (json-file's labels and env
	// options), nil when it has none.
	Attrs map[string]string
}

// ReadOptions selects entries: Since and Until bound the time (zero means
// unbounded; Until is inclusive), Tail keeps the last Tail messages (before
// time filtering, as Docker does; negative means all). Follow keeps reading
// as the file grows until Done is closed (the container's shim has exited and
// will write no more), Until has passed, or ctx ends.
type ReadOptions struct {
	Since  time.Time
	Until  time.Time
	Tail   int
	Follow bool
	Done   <-chan struct{}
	// Gunzip reads the rotated files that are compressed (path.N.gz);
	// without it they are an error.
	Gunzip func(io.Reader) (io.ReadCloser, error)
}

// Read calls fn for each selected entry of the json-file log at path,
// and of its rotated predecessors (path.N … path.1), in order. A missing
// log is errdefs.ErrNotFound. An error from fn stops the read and is
// returned. Following survives rotation: when path is replaced, the rest
// of the old file is read, then the new one.
func Read(ctx context.Context, path string, opts ReadOptions, fn func(Entry) error) error {
	files := logFiles(path)
	if len(files) == 0 {
		return &os.PathError{Op: "read log", Path: path, Err: errdefs.ErrNotFound}
	}
	start, off := 0, int64(0)
	if opts.Tail >= 0 {
		var err error
		if start, off, err = tailStart(files, opts.Tail, opts.Gunzip); err != nil {
			return err
		}
	}
	for i := start; i < len(files)-1; i++ {
		if err := readFile(ctx, files[i], off, ReadOptions{Since: opts.Since, Until: opts.Until, Gunzip: opts.Gunzip}, fn); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
		off = 0
	}
	err := readFile(ctx, path, off, opts, fn)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends a read early without an error (entries past Until).
var errStop = errors.New("stop")

// logFiles lists the log and its rotated files, oldest first.
func logFiles(path string) []string {
	var rotated []string
	for i := 1; ; i++ {
		p := rotatedName(path, i)
		if _, err := os.Stat(p); err != nil {
			p += gzExt
			if _, err := os.Stat(p); err != nil {
				break
			}
		}
		rotated = append([]string{p}, rotated...)
	}
	if _, err := os.Stat(path); err != nil {
		if len(rotated) == 0 {
			return nil
		}
	}
	return append(rotated, path)
}

// tailStart finds the file and offset where the last n lines begin.
func tailStart(files []string, n int, gunzip func(io.Reader) (io.ReadCloser, error)) (int, int64, error) {
	for i := len(files) - 1; i >= 0; i-- {
		off, found, err := fileTailOffset(files[i], n, gunzip)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		if found == n || i == 0 {
			return i, off, nil
		}
		n -= found
	}
	return 0, 0, nil
}

// readFile reads one file from off; with opts.Follow it goes on as the
// file grows and across a rotation of path.
func readFile(ctx context.Context, path string, off int64, opts ReadOptions, fn func(Entry) error) error {
	if !opts.Follow {
		// A rotated file: it may be compressed, or be compressed meanwhile.
		return readRotated(path, off, opts, fn)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	var w *growthWaiter
	if opts.Follow {
		w = newGrowthWaiter(path)
		defer func() { w.close() }()
	}
	br := bufio.NewReaderSize(f, 64*1024)
	var pending []byte
	doneSeen := false
	for {
		if err := drain(br, &pending, opts, fn); err != nil {
			return err
		}
		// At the end of what is written so far; pending holds a line whose
		// writer has not finished it yet.
		if doneSeen {
			return nil
		}
		if replaced(f, path) {
			// Rotated: what was left in the old file has been read; go on
			// with its successor (path itself unless rotations outran us).
			nf, err := os.Open(successor(f, path))
			if err != nil {
				return err
			}
			f.Close()
			w.close()
			f, w = nf, newGrowthWaiter(path)
			br.Reset(f)
			pending = pending[:0]
			continue
		}
		if !opts.Until.IsZero() && time.Now().After(opts.Until) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-opts.Done:
			// Read once more to the end: the writer finished before Done.
			doneSeen = true
		case <-w.wait():
		case <-time.After(250 * time.Millisecond):
			// A rotation may have moved the watched file away.
		}
	}
}

// drain delivers the complete lines of br up to its end. pending holds
// the start of a line not finished yet, on entry and on return.
func drain(br *bufio.Reader, pending *[]byte, opts ReadOptions, fn func(Entry) error) error {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			*pending = append(*pending, chunk...)
		}
		switch {
		case err == nil:
			stop, ferr := deliver(*pending, opts, fn)
			*pending = (*pending)[:0]
			if ferr != nil {
				return ferr
			}
			if stop {
				return errStop
			}
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// successor is the file written after f: f was rotated to path.k, so
// path.(k-1), or path when k is 1 or f is not found among the rotated.
func successor(f *os.File, path string) string {
	st, err := f.Stat()
	if err != nil {
		return path
	}
	for k := 1; k < 100; k++ {
		other, err := os.Stat(rotatedName(path, k))
		if err != nil {
			break
		}
		if os.SameFile(st, other) {
			if k == 1 {
				return path
			}
			return rotatedName(path, k-1)
		}
	}
	return path
}

// replaced reports whether path now names another file than f.
func replaced(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && !os.SameFile(a, b)
}

// deliver decodes one line and hands it to fn if it is selected. stop is
// true once entries are past Until.
func deliver(line []byte, opts ReadOptions, fn func(Entry) error) (stop bool, err error) {
	var e Entry
	err = tinyjson.Members(line, func(k string, v []byte) (err error) {
		if tinyjson.IsNull(v) {
			return nil
		}
		switch k {
		case "log":
			var s string
			s, err = tinyjson.String(v)
			e.Line = []byte(s)
		case "stream":
			e.Stream, err = tinyjson.String(v)
		case "time":
			e.Time, err = tinyjson.Time(v)
		case "attrs":
			e.Attrs, err = tinyjson.StringMap(v)
		}
		return err
	})
	if err != nil {
		// A torn line from a crash mid-write: skip it, as Docker does.
		return false, nil
	}
	if !opts.Since.IsZero() && e.Time.Before(opts.Since) {
		return false, nil
	}
	if !opts.Until.IsZero() && e.Time.After(opts.Until) {
		return true, nil
	}
	return false, fn(e)
}

// tailOffset finds where the last n complete lines of f begin, reading
// backwards so that tailing a big log costs only its tail. found is how
// many lines it found (less than n when the file is shorter).
func tailOffset(f *os.File, n int) (off int64, found int, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	end := st.Size()
	if n == 0 {
		return end, 0, nil
	}
	const chunk = 32 * 1024
	buf := make([]byte, chunk)
	seen := 0
	for pos := end; pos > 0; {
		size := int64(chunk)
		if pos < size {
			size = pos
		}
		pos -= size
		b := buf[:size]
		if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			if pos+int64(i) == end-1 {
				// The newline ending the last line is not a boundary
				// before a line we keep.
				continue
			}
			seen++
			if seen == n {
				return pos + int64(i) + 1, n, nil
			}
		}
	}
	if end > 0 {
		seen++ // the first line of the file
	}
	return 0, seen, nil
}
