package tinyjson

import (
	"time"
	"unsafe"
)

// Field decodes a member's raw value into the place it was made for.
type Field func(val []byte) error

// Decode walks the object in data and hands the value of each member that
// fields names to its Field. Other members are skipped, and a null leaves
// its field alone, as in encoding/json.
func Decode(data []byte, fields map[string]Field) error {
	return Members(data, func(k string, v []byte) error {
		f := fields[k]
		if f == nil || IsNull(v) {
			return nil
		}
		return f(v)
	})
}

// StringInto decodes a string into p.
func StringInto[T ~string](p *T) Field {
	return func(v []byte) error {
		s, err := String(v)
		*p = T(s)
		return err
	}
}

// IntInto decodes an integer into p.
func IntInto[T ~int | ~int64](p *T) Field {
	return func(v []byte) error {
		n, err := Int(v, int(unsafe.Sizeof(*p))*8)
		*p = T(n)
		return err
	}
}

// Uint16Into decodes an unsigned 16-bit integer into p.
func Uint16Into(p *uint16) Field {
	return func(v []byte) error {
		n, err := Uint(v, 16)
		*p = uint16(n)
		return err
	}
}

// BoolInto decodes true or false into p.
func BoolInto(p *bool) Field {
	return func(v []byte) (err error) {
		*p, err = Bool(v)
		return err
	}
}

// TimeInto decodes an RFC 3339 time into p.
func TimeInto(p *time.Time) Field {
	return func(v []byte) (err error) {
		*p, err = Time(v)
		return err
	}
}

// StringsInto decodes an array of strings into p.
func StringsInto(p *[]string) Field {
	return func(v []byte) (err error) {
		*p, err = Strings(v)
		return err
	}
}

// StringMapInto decodes an object of strings into p (a new map).
func StringMapInto(p *map[string]string) Field {
	return func(v []byte) error {
		m, err := StringMap(v)
		*p = m
		return err
	}
}

// StringMap decodes an object of strings.
func StringMap(v []byte) (map[string]string, error) {
	m := map[string]string{}
	err := Members(v, func(k string, val []byte) error {
		s, err := String(val)
		m[k] = s
		return err
	})
	return m, err
}

// RawInto keeps a copy of the raw value (JSON) in p.
func RawInto(p *[]byte) Field {
	return func(v []byte) error {
		*p = append([]byte(nil), v...)
		return nil
	}
}
