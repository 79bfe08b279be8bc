package apiserver

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/containerd/errdefs"
)

// logRecover logs one debug line per request and turns a panicking handler
// into a 500 so that one bad request never takes the daemon down.
// Headers are never logged: X-Registry-Auth carries credentials.
func (s *Server) logRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		s.active.Add(1)
		defer s.active.Done()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler { //nolint:errorlint // sentinel panic value, compared as net/http does
					panic(p)
				}
				s.log.ErrorContext(r.Context(), "API handler panicked",
					"method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				if rec.status != 0 || rec.hijacked {
					// Part of a response is out; abort the connection so the
					// client cannot take it for a complete one.
					panic(http.ErrAbortHandler)
				}
				httpError(rec, errdefs.ErrInternal.WithMessage(fmt.Sprintf("internal server error: %v", p)))
			}
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "API request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.statusOrOK()),
				slog.Duration("duration", time.Since(start)))
		}()
		next.ServeHTTP(rec, r)
	})
}

// recorder remembers the status for the log line and whether a response has
// started. It keeps Flush and Hijack reachable for streaming and attach
// handlers, directly and through http.ResponseController (Unwrap).
type recorder struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 && code >= 200 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

func (rec *recorder) Flush() {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

func (rec *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(rec.ResponseWriter).Hijack()
	if err == nil {
		rec.hijacked = true
		if rec.status == 0 {
			rec.status = http.StatusSwitchingProtocols
		}
	}
	return conn, brw, err
}

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

func (rec *recorder) statusOrOK() int {
	if rec.status == 0 {
		return http.StatusOK
	}
	return rec.status
}
