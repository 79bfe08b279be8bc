package tinyjson

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted as encoding/json does: with its HTML-safe
// \u003c, \u003e and \u0026, \u2028 and \u2029 escaped, and invalid UTF-8
// replaced by U+FFFD.
func AppendString[T ~string | ~[]byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		var buf [utf8.UTFMax]byte
		r, n := utf8.DecodeRune(buf[:copy(buf[:], s[i:])])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendInt appends n.
func AppendInt[T ~int | ~int64 | ~uint16 | ~uint32](b []byte, n T) []byte {
	return strconv.AppendInt(b, int64(n), 10)
}

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

// AppendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds).
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// Object builds a JSON object member by member.
type Object struct {
	b []byte
	n int
}

// NewObject starts an object appended to b.
func NewObject(b []byte) *Object { return &Object{b: append(b, '{')} }

// Key starts a member; the value follows with Raw or one of the typed
// setters.
func (o *Object) Key(k string) *Object {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = AppendString(o.b, k)
	o.b = append(o.b, ':')
	return o
}

// Str adds a string member.
func (o *Object) Str(k, v string) *Object {
	o.Key(k)
	o.b = AppendString(o.b, v)
	return o
}

// Int adds an integer member.
func (o *Object) Int(k string, v int64) *Object {
	o.Key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
	return o
}

// Bool adds a boolean member.
func (o *Object) Bool(k string, v bool) *Object {
	o.Key(k)
	o.b = strconv.AppendBool(o.b, v)
	return o
}

// Time adds a time member.
func (o *Object) Time(k string, v time.Time) *Object {
	o.Key(k)
	o.b = AppendTime(o.b, v)
	return o
}

// Raw adds a member whose value is already JSON.
func (o *Object) Raw(k string, v []byte) *Object {
	o.Key(k)
	o.b = append(o.b, v...)
	return o
}

// Strings adds an array of strings.
func (o *Object) Strings(k string, v []string) *Object {
	o.Key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return o
	}
	o.b = append(o.b, '[')
	for i, s := range v {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = AppendString(o.b, s)
	}
	o.b = append(o.b, ']')
	return o
}

// StringMap adds an object of strings, its keys sorted.
func (o *Object) StringMap(k string, m map[string]string) *Object {
	o.Key(k)
	o.b = AppendStringMap(o.b, m)
	return o
}

// AppendStringMap appends m as a JSON object, its keys sorted (as
// encoding/json writes a map).
func AppendStringMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	o := NewObject(b)
	for _, k := range keys {
		o.Str(k, m[k])
	}
	return o.End()
}

// End closes the object and returns the bytes.
func (o *Object) End() []byte { return append(o.b, '}') }
