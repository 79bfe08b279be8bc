package jsonlog

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Rotated files of a log with compress=true are gzipped, as Docker's
// json-file and local drivers keep them: path.1.gz … path.N.gz. The file
// just rotated is path.1 until its compression is done (by the writer's
// compressor, in the background), then path.1.gz replaces it; a reader
// takes either. Offsets into a compressed file count its uncompressed
// bytes, so an offset found in path.1 holds in path.1.gz. This package
// neither compresses nor decompresses itself: the shim, which writes,
// would carry a compressor in every container's memory for it.
const gzExt = ".gz"

// errNoGunzip is a compressed rotated file met without Gunzip.
var errNoGunzip = errors.New("a compressed log file, and no way to read it")

// Gunzipped is the name of p compressed.
func Gunzipped(p string) string { return p + gzExt }

// openRotated opens the rotated log p, or its compressed successor when p
// was compressed meanwhile, reading uncompressed bytes from off.
func openRotated(p string, off int64, gunzip func(io.Reader) (io.ReadCloser, error)) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(p, gzExt) {
		p += gzExt
		f, err = os.Open(p)
	}
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(p, gzExt) {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	if gunzip == nil {
		f.Close()
		return nil, &os.PathError{Op: "read log", Path: p, Err: errNoGunzip}
	}
	zr, err := gunzip(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "read log", Path: p, Err: err}
	}
	if _, err := io.CopyN(io.Discard, zr, off); err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, err
	}
	return gzFile{zr, f}, nil
}

// gzFile reads a decompressed file, and closes both.
type gzFile struct {
	io.ReadCloser
	f *os.File
}

func (g gzFile) Close() error {
	g.ReadCloser.Close()
	return g.f.Close()
}

// readRotated delivers the entries of a rotated log from off; one gone
// (rotated out of the kept files meanwhile) has none.
func readRotated(p string, off int64, opts ReadOptions, fn func(Entry) error) error {
	r, err := openRotated(p, off, opts.Gunzip)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	var pending []byte
	return drain(bufio.NewReaderSize(r, 64*1024), &pending, opts, fn)
}

// fileTailOffset is tailOffset of the log file p, compressed or not.
func fileTailOffset(p string, n int, gunzip func(io.Reader) (io.ReadCloser, error)) (off int64, found int, err error) {
	if strings.HasSuffix(p, gzExt) {
		return gzTailOffset(p, n, gunzip)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		// Compressed since it was listed.
		return gzTailOffset(p+gzExt, n, gunzip)
	}
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	return tailOffset(f, n)
}

// gzTailOffset finds where the last n lines of the compressed log p begin
// (in uncompressed bytes): a gzip stream cannot be read backwards, so it
// reads it all, remembering the starts of the last n lines.
func gzTailOffset(p string, n int, gunzip func(io.Reader) (io.ReadCloser, error)) (off int64, found int, err error) {
	r, err := openRotated(p, 0, gunzip)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 64*1024)
	starts := make([]int64, 0, min(n, 4096))
	var pos int64
	for lines := 0; ; {
		chunk, err := br.ReadSlice('\n')
		atStart := pos
		pos += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			// The rest of a long line follows: only its start counts.
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				pos += int64(len(chunk))
			}
		}
		if pos > atStart {
			if n > 0 {
				if len(starts) < n {
					starts = append(starts, atStart)
				} else {
					starts[lines%n] = atStart
				}
			}
			lines++
		}
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return pos, 0, nil
			}
			if lines < n {
				return 0, lines, nil
			}
			return starts[lines%n], n, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}
