package apiserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine"
)

// containerAttach hijacks the connection (Upgrade: tcp → 101) and joins it
// to the container's streams: multiplexed with stdcopy's header without a
// tty, raw with one. The response head is sent once the engine registered
// the attach, so that a start the client sends after it loses no output.
func (s *Server) containerAttach(w http.ResponseWriter, r *http.Request) error {
	ref := r.PathValue("id")
	c, err := s.backend.ContainerInspect(r.Context(), ref)
	if err != nil {
		return err
	}
	tty := c.Config != nil && c.Config.Tty
	hj, ok := w.(http.Hijacker)
	if !ok {
		return errdefs.ErrNotImplemented.WithMessage("connection cannot be hijacked")
	}
	discardBody(r)
	conn, buf, err := hj.Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	ct := "application/vnd.docker.multiplexed-stream"
	if tty || versionLess(APIVersion(r.Context()), "1.42") {
		ct = "application/vnd.docker.raw-stream"
	}
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: %s\r\n\r\n", ct)
	upgraded := r.Header.Get("Upgrade") != ""
	if upgraded {
		head = fmt.Sprintf("HTTP/1.1 101 UPGRADED\r\nContent-Type: %s\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n", ct)
	}
	out := &headWriter{conn: conn, head: head, upgraded: upgraded}
	stdout, stderr := streams(out, tty)
	req := engine.AttachRequest{
		Stream:     queryBool(r, "stream"),
		Logs:       queryBool(r, "logs"),
		Stdin:      queryBool(r, "stdin"),
		Stdout:     queryBool(r, "stdout"),
		Stderr:     queryBool(r, "stderr"),
		DetachKeys: r.URL.Query().Get("detachKeys"),
		Attached:   func() { out.sendHead() },
	}
	var stdin io.Reader = io.MultiReader(bufferedPart(buf.Reader), conn)
	err = s.backend.ContainerAttach(r.Context(), ref, req, stdin, stdout, stderr)
	if err != nil && !out.sent() {
		// Nothing went out yet: the client can still read a proper error.
		httpErrorRaw(conn, err)
		return nil
	}
	out.sendHead()
	endHijacked(conn)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("attach ended", "container", ref, "err", err)
	}
	return nil
}

// endHijacked ends the output side of a hijacked connection, then reads
// what the client still sends until it closes too (or a moment passes):
// closing a socket with unread input resets it, and the client would lose
// the last output it had not read yet.
func endHijacked(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	io.Copy(io.Discard, conn)
}

// discardBody reads the request's body, which is not part of the stdin
// stream that follows it: docker-modem (dockerode) sends its attach
// options as a JSON body with a Content-Length, then the container's input
// on the same connection. Docker reads stdin from the raw connection and
// so never hands that body to the container (what its server had buffered
// is dropped); reading exactly the body keeps the input sent right after
// it. A body without a length (chunked) is left alone: its end may never
// come before the raw stream.
func discardBody(r *http.Request) {
	if r.ContentLength > 0 {
		io.CopyN(io.Discard, r.Body, r.ContentLength)
	}
}

// bufferedPart returns what the server already read past the request head.
func bufferedPart(br *bufio.Reader) io.Reader {
	n := br.Buffered()
	if n == 0 {
		return eofReader{}
	}
	b, _ := br.Peek(n)
	return &onceReader{b: append([]byte(nil), b...)}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type onceReader struct{ b []byte }

func (o *onceReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

// headWriter sends the response head before the first byte of output, or
// when the engine says the attach is registered, whichever comes first.
type headWriter struct {
	mu   sync.Mutex
	conn net.Conn
	head string
	// upgraded: the head is a 101, after which the client reads the
	// stream from its socket (waitHeadRead).
	upgraded bool
	isSent   bool
}

func (h *headWriter) sendHead() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isSent {
		h.isSent = true
		io.WriteString(h.conn, h.head)
		if h.upgraded {
			waitHeadRead(h.conn)
		}
	}
}

func (h *headWriter) sent() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.isSent
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.sendHead()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn.Write(p)
}

// httpErrorRaw writes an error response on a hijacked connection.
func httpErrorRaw(conn net.Conn, err error) {
	rw := &rawResponse{header: http.Header{}}
	httpError(rw, err)
	resp := &http.Response{StatusCode: rw.status, ProtoMajor: 1, ProtoMinor: 1, Header: rw.header, ContentLength: int64(len(rw.body))}
	resp.Body = io.NopCloser(bytes.NewReader(rw.body))
	resp.Write(conn)
}

type rawResponse struct {
	header http.Header
	status int
	body   []byte
}

func (r *rawResponse) Header() http.Header { return r.header }
func (r *rawResponse) WriteHeader(s int)   { r.status = s }
func (r *rawResponse) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, p...)
	return len(p), nil
}
