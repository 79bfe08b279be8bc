package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
)

// maxJSONBody bounds JSON request bodies; the largest Docker sends (container
// create with many env vars, labels and mounts) is far below it.
const maxJSONBody = 4 << 20

// writeJSON writes v as the JSON response with the given status, as dockerd
// does (no HTML escaping, trailing newline).
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return writeJSONBody(w, v)
}

// writeJSONBody writes v as JSON after the headers were sent.
func writeJSONBody(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// decodeJSON decodes the JSON request body into v. Like dockerd it accepts an
// empty body (leaving v untouched) and an absent Content-Type on it, and
// refuses other content types, malformed JSON, trailing data and bodies over
// maxJSONBody; all those errors are InvalidArgument (400).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONBody(w, r, v, false)
}

// decodeRequiredJSON is decodeJSON for a request that cannot do without
// its body (container create): as in dockerd, an empty body is the
// decoder's "invalid JSON: EOF".
func decodeRequiredJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSONBody(w, r, v, true)
}

func decodeJSONBody(w http.ResponseWriter, r *http.Request, v any, required bool) error {
	ct := r.Header.Get("Content-Type")
	empty := r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
	if ct != "" || !empty {
		if err := checkJSONContentType(ct); err != nil {
			return err
		}
	}
	if empty && !required {
		return nil
	}
	body := io.Reader(http.NoBody)
	if r.Body != nil {
		b := http.MaxBytesReader(w, r.Body, maxJSONBody)
		defer b.Close()
		body = b
	}
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return fmt.Errorf("request body larger than %d bytes: %w", tooBig.Limit, errdefs.ErrInvalidArgument)
		case errors.Is(err, io.EOF) && !required:
			return errdefs.ErrInvalidArgument.WithMessage("invalid JSON: got EOF while reading request body")
		default:
			return errdefs.ErrInvalidArgument.WithMessage("invalid JSON: " + err.Error())
		}
	}
	if dec.More() {
		return errdefs.ErrInvalidArgument.WithMessage("unexpected content after JSON")
	}
	return nil
}

func checkJSONContentType(ct string) error {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("malformed Content-Type header (%s): %v", ct, err))
	}
	if mt != "application/json" {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("unsupported Content-Type header (%s): must be 'application/json'", ct))
	}
	return nil
}

// queryBool reads a boolean query parameter the way dockerd does: "", "0",
// "no", "false" and "none" (any case, spaces trimmed) are false, anything
// else ("1", "true", "True", "yes") is true.
func queryBool(r *http.Request, key string) bool {
	switch strings.ToLower(strings.TrimSpace(r.URL.Query().Get(key))) {
	case "", "0", "no", "false", "none":
		return false
	default:
		return true
	}
}

// queryBoolDefault is queryBool with def for a parameter that is absent
// (present but empty is false, as in dockerd).
func queryBoolDefault(r *http.Request, key string, def bool) bool {
	if !r.URL.Query().Has(key) {
		return def
	}
	return queryBool(r, key)
}

// terminalSize reads the h and w parameters of a resize as Docker does:
// unsigned 32-bit decimals, refused with the bare reason of strconv
// ("invalid syntax", "value out of range"; a negative number is out of
// range, not bad syntax). A terminal holds at most 65535 rows and
// columns (the kernel's winsize is 16-bit): larger sizes, which Docker
// accepts, are that.
func terminalSize(r *http.Request) (height, width uint16, err error) {
	q := r.URL.Query()
	dim := func(key, name string) (uint16, error) {
		v := q.Get(key)
		n, err := parseUint32(v)
		if err != nil {
			return 0, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid resize %s %q: %v", name, v, err))
		}
		return uint16(min(n, math.MaxUint16)), nil
	}
	if height, err = dim("h", "height"); err != nil {
		return 0, 0, err
	}
	if width, err = dim("w", "width"); err != nil {
		return 0, 0, err
	}
	return height, width, nil
}

// parseUint32 is strconv.ParseUint(v, 10, 32) answering only its reason
// (strconv.ErrSyntax or strconv.ErrRange), with "-5" out of range.
func parseUint32(v string) (uint32, error) {
	digits, negative := strings.CutPrefix(v, "-")
	if digits == "" || digits[0] == '+' {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseUint(digits, 10, 32)
	var numErr *strconv.NumError
	switch {
	case errors.As(err, &numErr):
		return 0, numErr.Err
	case err != nil:
		return 0, err
	case negative:
		return 0, strconv.ErrRange
	}
	return uint32(n), nil
}

// jsonStream writes newline-delimited JSON, each value flushed (Docker's
// progress, events, stats): the headers go out with the first value (or
// begin), so an error before it is a plain HTTP error; an error after it
// is an errorDetail line, as Docker sends it.
type jsonStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	enc     *json.Encoder
	started bool
	// contentType is the stream's media type, application/json unless
	// set; a JSON text sequence puts an RS byte before each record.
	contentType string
}

func newJSONStream(w http.ResponseWriter) *jsonStream {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonStream{w: w, enc: enc}
}

// send writes one progress message.
func (s *jsonStream) send(m jsonstream.Message) {
	s.sendValue(NewStreamMessage(m))
}

// sendValue writes v as one line.
func (s *jsonStream) sendValue(v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	if s.contentType == mediaJSONSequence {
		if _, err := s.w.Write([]byte{0x1e}); err != nil {
			return err
		}
	}
	err := s.enc.Encode(v)
	s.flushLocked()
	return err
}

// begin sends the headers now, before any value: a client that follows
// a stream knows it is answered.
func (s *jsonStream) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	s.flushLocked()
}

func (s *jsonStream) flushLocked() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *jsonStream) startLocked() {
	if !s.started {
		s.started = true
		ct := s.contentType
		if ct == "" {
			ct = "application/json"
		}
		s.w.Header().Set("Content-Type", ct)
		s.w.WriteHeader(http.StatusOK)
	}
}

// end ends a stream of values that has no error line (events, stats): err
// goes out as HTTP error when nothing was sent; after that it can only be
// the client's going away, and the stream just ends.
func (s *jsonStream) end(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return nil
	}
	return err
}

// finish ends the stream: err goes out as HTTP error when nothing was sent.
func (s *jsonStream) finish(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.startLocked()
		return nil
	}
	if !s.started {
		return err
	}
	// Docker still sends the legacy "error" string beside errorDetail.
	msg := errorMessage(err)
	detail := &jsonstream.Error{Message: msg}
	var coded exitCoder
	if errors.As(err, &coded) {
		detail.Code = coded.ExitCode()
	}
	s.enc.Encode(struct {
		ErrorDetail *jsonstream.Error `json:"errorDetail"`
		Error       string            `json:"error"`
	}{detail, msg})
	return nil
}

// exitCoder is an error that carries a process's exit code (a build's
// failed RUN): Docker puts it in errorDetail's code, and clients exit
// with it (docker build, dockerode users checking errorDetail.code).
type exitCoder interface{ ExitCode() int }

// nonNil is s, or an empty slice for nil: Docker answers [] where a list
// is empty, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
