package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
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
	ct := r.Header.Get("Content-Type")
	empty := r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
	if ct != "" || !empty {
		if err := checkJSONContentType(ct); err != nil {
			return err
		}
	}
	if empty {
		return nil
	}
	body := http.MaxBytesReader(w, r.Body, maxJSONBody)
	defer body.Close()
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return fmt.Errorf("request body larger than %d bytes: %w", tooBig.Limit, errdefs.ErrInvalidArgument)
		case errors.Is(err, io.EOF):
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
