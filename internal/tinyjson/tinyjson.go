// Package tinyjson reads and writes the few JSON objects that pass through
// the shim, without reflection: encoding/json (with reflect and fmt, which
// it brings) is half a megabyte of resident memory in every shim, one per
// running container (docs/design.md, Performance goals). Its output is what encoding/json writes
// for the same values, and it reads what encoding/json reads; the tests
// compare the two.
//
// Writing: Append* add a value to a byte slice. Reading: Members walks an
// object, handing each member's raw value to the caller, which converts it
// with String, Int, Uint, Bool, Time or keeps it raw. A null value leaves
// the field as it was, as in encoding/json.
package tinyjson

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is malformed JSON, or a value of the wrong kind.
var ErrSyntax = errors.New("invalid JSON")

// maxDepth bounds the nesting of skipped values.
const maxDepth = 100

// Members calls fn with the key and raw value of each member of the object
// in data (surrounding space allowed), in order. An error from fn stops
// the walk and is returned.
func Members(data []byte, fn func(key string, val []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		if skipSpace(data, i+1) != len(data) {
			return ErrSyntax
		}
		return nil
	}
	for {
		end, err := valueEnd(data, i, 0)
		if err != nil || data[i] != '"' {
			return ErrSyntax
		}
		key, err := String(data[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return ErrSyntax
		}
		i = skipSpace(data, i+1)
		end, err = valueEnd(data, i, 0)
		if err != nil {
			return err
		}
		if err := fn(key, data[i:end]); err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return ErrSyntax
		}
		if data[i] == '}' {
			if skipSpace(data, i+1) != len(data) {
				return ErrSyntax
			}
			return nil
		}
		if data[i] != ',' {
			return ErrSyntax
		}
		i = skipSpace(data, i+1)
	}
}

// IsNull reports whether a raw value is null.
func IsNull(val []byte) bool { return string(val) == "null" }

// String decodes a JSON string; invalid UTF-8 becomes U+FFFD, as in
// encoding/json.
func String(val []byte) (string, error) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
		return "", ErrSyntax
	}
	s := val[1 : len(val)-1]
	simple := true
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return string(s), nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", ErrSyntax
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				b = append(b, s[i])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, n := hex4(s[i+1:])
				if n < 0 {
					return "", ErrSyntax
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair, or an error-free U+FFFD, as encoding/json.
					if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
						if r2, n2 := hex4(s[i+3:]); n2 >= 0 {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								b = utf8.AppendRune(b, dec)
								i += 6
								break
							}
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", ErrSyntax
			}
			i++
		case c == '"' || c < 0x20:
			return "", ErrSyntax
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return string(b), nil
}

func hex4(s []byte) (rune, int) {
	if len(s) < 4 {
		return 0, -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, -1
		}
		r = r*16 + rune(c)
	}
	return r, 4
}

// Int decodes an integer of bits bits; a fraction or exponent is an
// error, as encoding/json's for an int field.
func Int(val []byte, bits int) (int64, error) {
	n, err := strconv.ParseInt(string(val), 10, bits)
	if err != nil || !isNumber(val) {
		return 0, ErrSyntax
	}
	return n, nil
}

// Uint decodes an unsigned integer of bits bits.
func Uint(val []byte, bits int) (uint64, error) {
	n, err := strconv.ParseUint(string(val), 10, bits)
	if err != nil || !isNumber(val) {
		return 0, ErrSyntax
	}
	return n, nil
}

// Bool decodes true or false.
func Bool(val []byte) (bool, error) {
	switch string(val) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, ErrSyntax
}

// Time decodes an RFC 3339 time, as time.Time's UnmarshalJSON.
func Time(val []byte) (time.Time, error) {
	s, err := String(val)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, ErrSyntax
	}
	return t, nil
}

// Strings decodes an array of strings.
func Strings(val []byte) ([]string, error) {
	i := skipSpace(val, 0)
	if i >= len(val) || val[i] != '[' {
		return nil, ErrSyntax
	}
	out := []string{}
	i = skipSpace(val, i+1)
	if i < len(val) && val[i] == ']' {
		return out, nil
	}
	for {
		end, err := valueEnd(val, i, 0)
		if err != nil {
			return nil, err
		}
		s, err := String(val[i:end])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		i = skipSpace(val, end)
		if i >= len(val) {
			return nil, ErrSyntax
		}
		if val[i] == ']' {
			return out, nil
		}
		if val[i] != ',' {
			return nil, ErrSyntax
		}
		i = skipSpace(val, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the value that starts at data[i].
func valueEnd(data []byte, i, depth int) (int, error) {
	if i >= len(data) || depth > maxDepth {
		return 0, ErrSyntax
	}
	switch c := data[i]; {
	case c == '"':
		for j := i + 1; j < len(data); j++ {
			switch c := data[j]; {
			case c == '\\':
				j++
				if j >= len(data) {
					return 0, ErrSyntax
				}
				switch data[j] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if _, n := hex4(data[j+1:]); n < 0 {
						return 0, ErrSyntax
					}
					j += 4
				default:
					return 0, ErrSyntax
				}
			case c == '"':
				return j + 1, nil
			case c < 0x20:
				return 0, ErrSyntax
			}
		}
		return 0, ErrSyntax
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		j := skipSpace(data, i+1)
		if j < len(data) && data[j] == closing {
			return j + 1, nil
		}
		for {
			if c == '{' {
				end, err := valueEnd(data, j, depth+1)
				if err != nil || data[j] != '"' {
					return 0, ErrSyntax
				}
				j = skipSpace(data, end)
				if j >= len(data) || data[j] != ':' {
					return 0, ErrSyntax
				}
				j = skipSpace(data, j+1)
			}
			end, err := valueEnd(data, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipSpace(data, end)
			if j >= len(data) {
				return 0, ErrSyntax
			}
			if data[j] == closing {
				return j + 1, nil
			}
			if data[j] != ',' {
				return 0, ErrSyntax
			}
			j = skipSpace(data, j+1)
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
				return i + len(lit), nil
			}
		}
		return 0, ErrSyntax
	case c == '-' || '0' <= c && c <= '9':
		j := i + 1
		for j < len(data) && (data[j] >= '0' && data[j] <= '9' || data[j] == '.' || data[j] == 'e' || data[j] == 'E' || data[j] == '+' || data[j] == '-') {
			j++
		}
		if !isNumber(data[i:j]) {
			return 0, ErrSyntax
		}
		return j, nil
	}
	return 0, ErrSyntax
}

// isNumber checks JSON's number grammar.
func isNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
