package server

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// logger writes the shim's diagnostics to stderr (the bundle's shim.log)
// in log/slog's text format, without linking log/slog (docs/design.md, Performance goals: every
// package the shim links is resident memory in each shim). Attributes are
// key/value string pairs.
type logger struct {
	debugOn bool
	id      string
}

func (l *logger) debug(msg string, kv ...string) {
	if l.debugOn {
		l.write("DEBUG", msg, kv)
	}
}

func (l *logger) info(msg string, kv ...string)  { l.write("INFO", msg, kv) }
func (l *logger) warn(msg string, kv ...string)  { l.write("WARN", msg, kv) }
func (l *logger) error(msg string, kv ...string) { l.write("ERROR", msg, kv) }

func (l *logger) write(level, msg string, kv []string) {
	b := make([]byte, 0, 128)
	b = append(b, "time="...)
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, " level="...)
	b = append(b, level...)
	b = append(b, " msg="...)
	b = appendValue(b, msg)
	if l.id != "" {
		b = append(b, " container="...)
		b = appendValue(b, l.id)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = appendValue(b, kv[i+1])
	}
	b = append(b, '\n')
	_, _ = os.Stderr.Write(b)
}

// appendValue quotes a value the way slog's text handler does: only when
// it is empty or holds spaces, quotes, '=' or control characters.
func appendValue(b []byte, v string) []byte {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == '"' || r == '=' || r == 0x7f }) {
		return strconv.AppendQuote(b, v)
	}
	return append(b, v...)
}

func itoa(n int) string { return strconv.Itoa(n) }
