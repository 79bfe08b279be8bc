package tinyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// encoding/json is the reference: what it writes, AppendString writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "hello\n", "<a&b>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é漢字🙂", "\b\f\t\r\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if got := AppendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString([]byte %q) = %s, encoding/json %s", s, got, want)
		}
	})
}

// What encoding/json reads as a string, String reads the same.
func FuzzString(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\u00e9\ud83d\ude42"`, `"\ud800x"`, `"\udc00\ud800"`, "\"\xff\"", `"\/\b\f\n\r\t"`, `"\x"`, `"a`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want string
		werr := json.Unmarshal(data, &want)
		got, err := String(bytes.TrimSpace(data))
		if werr == nil && (err != nil || got != want) {
			t.Fatalf("String(%q) = %q, %v; encoding/json %q", data, got, err, want)
		}
		if werr != nil && err == nil && json.Valid(data) {
			t.Fatalf("String(%q) = %q, encoding/json fails: %v", data, got, werr)
		}
	})
}

// Members sees the members encoding/json sees (the last of duplicates wins
// in both).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1,"b":[1,{"c":null}],"a":"x"} `, `{"a":true,"b":false,"n":null,"f":-1.5e3}`, `{"a":1,}`, `{"a" 1}`, `[1]`, `{"a":{"b":{}}}`, `{"a":"\u0041"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		werr := json.Unmarshal(data, &want)
		got := map[string]json.RawMessage{}
		err := Members(data, func(k string, v []byte) error {
			got[k] = append(json.RawMessage(nil), v...)
			return nil
		})
		if werr == nil && want != nil {
			if err != nil {
				t.Fatalf("Members(%q): %v; encoding/json reads it", data, err)
			}
			if len(got) != len(want) {
				t.Fatalf("Members(%q) = %v, encoding/json %v", data, got, want)
			}
			for k, v := range want {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("Members(%q)[%q] = %s, encoding/json %s", data, k, got[k], v)
				}
			}
		}
		if werr != nil && err == nil && !json.Valid(data) {
			t.Fatalf("Members(%q) accepted invalid JSON (%v)", data, werr)
		}
	})
}

func TestScalars(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		val  string
		get  func([]byte) (any, error)
		want any
		ok   bool
	}{
		{"int", "-42", func(v []byte) (any, error) { n, err := Int(v, 64); return n, err }, int64(-42), true},
		{"int fraction", "1.0", func(v []byte) (any, error) { return Int(v, 64) }, nil, false},
		{"int exponent", "1e2", func(v []byte) (any, error) { return Int(v, 64) }, nil, false},
		{"int plus", "+1", func(v []byte) (any, error) { return Int(v, 64) }, nil, false},
		{"int leading zero", "01", func(v []byte) (any, error) { return Int(v, 64) }, nil, false},
		{"uint16 overflow", "70000", func(v []byte) (any, error) { return Uint(v, 16) }, nil, false},
		{"uint16", "65535", func(v []byte) (any, error) { n, err := Uint(v, 16); return n, err }, uint64(65535), true},
		{"bool", "true", func(v []byte) (any, error) { b, err := Bool(v); return b, err }, true, true},
		{"bool string", `"true"`, func(v []byte) (any, error) { return Bool(v) }, nil, false},
		{"time", `"2026-11-22T10:00:00.123456789Z"`, func(v []byte) (any, error) { t, err := Time(v); return t, err }, ts, true},
		{"time bad", `"yesterday"`, func(v []byte) (any, error) { return Time(v) }, nil, false},
		{"strings", `["a", "b\n"]`, func(v []byte) (any, error) { s, err := Strings(v); return len(s) == 2 && s[1] == "b\n", err }, true, true},
		{"strings empty", `[]`, func(v []byte) (any, error) { s, err := Strings(v); return s != nil && len(s) == 0, err }, true, true},
		{"strings of numbers", `[1]`, func(v []byte) (any, error) { return Strings(v) }, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get([]byte(tc.val))
			if !tc.ok {
				if !errors.Is(err, ErrSyntax) {
					t.Errorf("%s: %v, want ErrSyntax", tc.val, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%s: %v %v, want %v", tc.val, got, err, tc.want)
			}
		})
	}
}

// An Object reads back through encoding/json as what was put in.
func TestObject(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	b := NewObject(nil).Str("s", "<x>\n").Int("i", -3).Bool("b", true).Time("t", ts).
		Raw("r", []byte(`{"k":[1]}`)).Strings("l", []string{"a", "é"}).Strings("nil", nil).End()
	var got struct {
		S   string
		I   int
		B   bool
		T   time.Time
		R   json.RawMessage
		L   []string
		Nil []string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.S != "<x>\n" || got.I != -3 || !got.B || !got.T.Equal(ts) || string(got.R) != `{"k":[1]}` || len(got.L) != 2 || got.L[1] != "é" || got.Nil != nil {
		t.Errorf("%s read back as %+v", b, got)
	}
}
