package wire

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/containerd/errdefs"
)

// The socket protocol is deliberately tiny (no net/http in a binary that is
// re-executed as every container's init). One request per connection:
//
//	client → shim: one JSON Request line
//	shim → client: one JSON Response line
//
// For attach and exec the connection then carries frames both ways. A frame
// is an 8-byte header (stream byte, 3 zero bytes, big-endian uint32 size,
// the layout of Docker's stdcopy) and the payload. Client → shim: StreamStdin
// data; an empty StdinStream frame means stdin EOF (so a client that merely
// drops the connection detaches without closing the container's stdin, as
// Docker's detach keys do). Shim → client: StreamStdout/StreamStderr data and,
// for exec, one final StreamExit frame holding the JSON ExitStatus. The shim
// closes the connection when the process's output has ended.

// Ops understood by the shim.
const (
	OpState     = "state"
	OpStart     = "start"
	OpKill      = "kill"
	OpResize    = "resize"
	OpWait      = "wait"
	OpAttach    = "attach"
	OpExec      = "exec"
	OpExecState = "exec-state"
	OpPause     = "pause"
	OpResume    = "resume"
)

// Stream ids in frame headers.
const (
	StreamStdin  byte = 0
	StreamStdout byte = 1
	StreamStderr byte = 2
	StreamExit   byte = 3
)

// maxFrame bounds a frame so a corrupt header cannot make the reader
// allocate gigabytes.
const maxFrame = 1 << 20

// Request is the first line a client sends.
type Request struct {
	Op     string `json:"op"`
	Signal int    `json:"signal,omitempty"`
	Height uint16 `json:"h,omitempty"`
	Width  uint16 `json:"w,omitempty"`
	Stdin  bool   `json:"stdin,omitempty"`
	Stdout bool   `json:"stdout,omitempty"`
	Stderr bool   `json:"stderr,omitempty"`
	// ExecID names an exec process (exec, exec-state, resize of an exec,
	// and wait: for that exec's end instead of the container's).
	ExecID string `json:"execId,omitempty"`
	// Process is the exec's OCI process (specs.Process) as JSON: the shim
	// hands it to hutch-runtime undecoded, and needs only Tty of it.
	Process RawJSON `json:"process,omitempty"`
	// Tty is the exec process's Terminal.
	Tty bool `json:"tty,omitempty"`
	// Detach starts an exec process without streams.
	Detach bool `json:"detach,omitempty"`
}

// Response is the first line the shim answers.
type Response struct {
	Error    string      `json:"error,omitempty"`
	Class    string      `json:"class,omitempty"`
	ExitCode int         `json:"exitCode,omitempty"`
	Pid      int         `json:"pid,omitempty"`
	State    *State      `json:"state,omitempty"`
	Exit     *ExitStatus `json:"exit,omitempty"`
	Exec     *ExecState  `json:"exec,omitempty"`
}

// ErrorResponse encodes err with its class for the client.
func ErrorResponse(err error) *Response {
	r := &Response{Error: err.Error(), Class: errClass(err)}
	var se *StartError
	if errors.As(err, &se) {
		r.Error, r.ExitCode = se.Msg, se.ExitCode
	}
	return r
}

// Err turns an error response back into a classed error.
func (r *Response) Err() error {
	if r.Error == "" {
		return nil
	}
	return classErr(r.Class, r.Error, r.ExitCode)
}

// WriteJSONLine writes v as one line, none longer than MaxLine: the reader
// would hang up half-way, and the writer see only a reset connection.
func WriteJSONLine(w io.Writer, v interface{ MarshalJSON() ([]byte, error) }) error {
	b, err := v.MarshalJSON()
	if err != nil {
		return err
	}
	if len(b) >= MaxLine {
		return ErrLineTooLong
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// MaxLine bounds one JSON line of the protocol. A request is mostly a few
// hundred bytes, but an exec's carries its process spec, whose
// environment Docker does not bound (the kernel takes up to 2 MiB of
// arguments and environment); the runtime server's requests have the
// bound, and a little more for what they carry besides (maxRuntimeRequest).
const MaxLine = 1 << 20

// ErrLineTooLong: a line of more than MaxLine bytes.
var ErrLineTooLong = Wrap("request to the shim of more than "+strconv.Itoa(MaxLine)+" bytes: command or environment too long", errdefs.ErrInvalidArgument)

// ReadJSONLine reads one line into v. br must be the reader used for every
// later read on the connection, since it may have buffered frame bytes.
// A line longer than br's buffer is gathered, up to MaxLine bytes: before,
// such a line ended the connection unanswered, and `docker exec -e` of a
// 6000-byte value failed with "shim not running".
func ReadJSONLine(br *bufio.Reader, v interface{ UnmarshalJSON([]byte) error }) error {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxLine {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		if len(long) > MaxLine {
			return ErrLineTooLong
		}
		line = long
	}
	if err != nil {
		return err
	}
	return v.UnmarshalJSON(line)
}

// FrameWriter writes frames; it is safe for concurrent use so that stdout
// and stderr pumps can share one connection.
type FrameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewFrameWriter frames onto w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// WriteLine writes v as a JSON line between frames.
func (f *FrameWriter) WriteLine(v interface{ MarshalJSON() ([]byte, error) }) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return WriteJSONLine(f.w, v)
}

// WriteFrame writes one frame; large payloads are split.
func (f *FrameWriter) WriteFrame(stream byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		n := min(len(p), maxFrame)
		// One write per frame keeps header and payload together.
		b := append(f.buf[:0], stream, 0, 0, 0, 0, 0, 0, 0)
		b[4], b[5], b[6], b[7] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		b = append(b, p[:n]...)
		f.buf = b
		if _, err := f.w.Write(b); err != nil {
			return err
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

// ReadFrame reads one frame header and payload into buf (grown if needed).
func ReadFrame(r io.Reader, buf []byte) (stream byte, payload []byte, err error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := uint32(hdr[4])<<24 | uint32(hdr[5])<<16 | uint32(hdr[6])<<8 | uint32(hdr[7])
	if n > maxFrame {
		return 0, nil, errors.New("shim protocol: frame of " + strconv.FormatUint(uint64(n), 10) + " bytes")
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return hdr[0], buf, nil
}
