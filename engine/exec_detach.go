package engine

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
)

// defaultDetachKeys is Docker's ctrl-p ctrl-q.
var defaultDetachKeys = []byte{16, 17}

// parseDetachKeys reads Docker's detach key syntax (its term.ToBytes):
// comma-separated keys, each a single character, ctrl-<c> with c one of
// a-z @ [ \ ] ^ _ (lower case only), or DEL. The empty string is no keys
// (the default applies). what names the keys in the error, Docker's
// "escape" for exec and "detach" for attach.
func parseDetachKeys(s, what string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	var keys []byte
	for _, k := range strings.Split(s, ",") {
		if len(k) == 1 {
			keys = append(keys, k[0])
			continue
		}
		if k == "DEL" {
			keys = append(keys, 127)
			continue
		}
		c, ok := strings.CutPrefix(k, "ctrl-")
		if !ok || len(c) != 1 {
			return nil, badDetachKeys(s, what)
		}
		switch b := c[0]; {
		case b >= 'a' && b <= 'z':
			keys = append(keys, b-'a'+1)
		case b == '@':
			keys = append(keys, 0)
		case b >= '[' && b <= '_':
			keys = append(keys, b-'['+27)
		default:
			return nil, badDetachKeys(s, what)
		}
	}
	return keys, nil
}

func badDetachKeys(s, what string) error {
	return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid %s keys (%s) provided", what, s))
}

// escapeReader passes a tty's input through until the detach keys arrive:
// then it calls detach and ends the input without an EOF being sent on, so
// the process keeps its terminal (Docker's escape proxy). Bytes that only
// began the sequence are passed on once it is clear they do not complete
// it.
type escapeReader struct {
	r       io.Reader
	keys    []byte
	detach  func()
	matched int    // how many of keys the input ended with
	pending []byte // bytes to return before reading more
	done    bool
}

func newEscapeReader(r io.Reader, keys []byte, detach func()) io.Reader {
	if len(keys) == 0 {
		keys = defaultDetachKeys
	}
	return &escapeReader{r: r, keys: keys, detach: detach}
}

// errDetached ends the input. It is not io.EOF: the shim client sends an
// EOF only for io.EOF, and a detach must not close the process's input.
var errDetached = errors.New("detached with the detach keys")

func (e *escapeReader) Read(p []byte) (int, error) {
	for {
		if len(e.pending) > 0 {
			n := copy(p, e.pending)
			e.pending = e.pending[n:]
			return n, nil
		}
		if e.done {
			return 0, errDetached
		}
		buf := make([]byte, len(p))
		n, err := e.r.Read(buf)
		out := e.scan(buf[:n])
		if err != nil && !e.done {
			// The input ends inside a sequence: it was input after all.
			out = append(out, e.keys[:e.matched]...)
			e.matched = 0
		}
		if e.done {
			e.detach()
		}
		if len(out) > 0 {
			e.pending = out
			continue
		}
		if err != nil {
			return 0, err
		}
	}
}

// scan returns the bytes of in that can be passed on, keeping a partial
// match back.
func (e *escapeReader) scan(in []byte) []byte {
	var out []byte
	for _, b := range in {
		if e.done {
			break
		}
		if b == e.keys[e.matched] {
			e.matched++
			if e.matched == len(e.keys) {
				e.done = true
			}
			continue
		}
		// Not the next key: what matched so far was input after all.
		out = append(out, e.keys[:e.matched]...)
		e.matched = 0
		if b == e.keys[0] {
			e.matched = 1
			if len(e.keys) == 1 {
				e.done = true
			}
			continue
		}
		out = append(out, b)
	}
	return out
}
