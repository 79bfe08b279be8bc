package ckeeper

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hutch-engine/hutch/rootless/keeper"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin/msg"
)

// asGo is what Go's decoder makes of a port request body, as
// rootlesskit's child reads it.
func asGo(b []byte) (PortRequest, error) {
	var r msg.Request
	if err := json.Unmarshal(b, &r); err != nil {
		return PortRequest{}, err
	}
	return PortRequest{Type: r.Type, Proto: r.Proto, IP: r.IP, Port: r.Port, ParentIP: r.ParentIP,
		HostGatewayIP: r.HostGatewayIP, SourceIP: r.SourceIP, SourcePort: r.SourcePort}, nil
}

// comparable reports whether an input is one whose decoding C and Go
// must agree on: plain ASCII (Go folds some non-ASCII letters into
// ASCII keys and replaces invalid UTF-8; hutch-keeper does neither).
func comparable(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return !bytes.Contains(b, []byte(`\u`))
}

// What rootlesskit's parent sends decodes as Go decodes it; what Go
// refuses, hutch-keeper refuses.
func TestParsePortRequest(t *testing.T) {
	good := []string{
		`{"Type":"init","Proto":"","IP":"","Port":0,"ParentIP":"","HostGatewayIP":""}`,
		`{"Type":"connect","Proto":"tcp","IP":"10.0.2.100","Port":8080,"ParentIP":"0.0.0.0","HostGatewayIP":"192.168.1.2","SourceIP":"198.51.100.1","SourcePort":40000}`,
		`{"type":"connect","PROTO":"udp6","ip":"::1","port":53}`,
		` {"Type":"connect","Unknown":{"a":[1,2.5e3,{"b":null}],"c":true},"Port":-0} `,
		`{"Type":"connect","IP":null,"Port":null,"Type":"init"}`,
		`{"Type":"\"\\\/\b\f\n\r\t"}`,
		`{}`,
	}
	for _, in := range good {
		want, err := asGo([]byte(in))
		if err != nil {
			t.Fatalf("Go refuses %s: %v", in, err)
		}
		got, err := ParsePortRequest([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
		} else if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", in, got, want)
		}
	}
	bad := []string{
		``, `null`, `[]`, `{`, `{"Type"}`, `{"Type":1}`, `{"Port":"1"}`, `{"Port":1.5}`, `{"Port":1e2}`,
		`{"Port":01}`, `{"Port":99999999999999999999}`, `{"Port":true}`, `{"Type":"a"} x`, `{"Type":"a",}`,
		`{"Type":"a` + "\n" + `"}`, `{"Type":"\x"}`, `{"Type":"\u12"}`, `{"a":[1,]}`, `{"a":tru}`,
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	}
	for _, in := range bad {
		if _, err := ParsePortRequest([]byte(in)); err == nil {
			t.Errorf("%q decoded", in)
		}
	}
	// A value longer than hutch-keeper's field is refused, not cut.
	long := `{"IP":"` + strings.Repeat("1", 100) + `"}`
	if _, err := ParsePortRequest([]byte(long)); err == nil {
		t.Error("an address of 100 characters decoded")
	}
	// \u escapes decode as Go decodes them; a NUL is refused.
	for in, want := range map[string]string{`{"IP":"\u0031\u00e9\ud83d\ude00\ud800"}`: "1é😀\uFFFD"} {
		if got, err := ParsePortRequest([]byte(in)); err != nil || got.IP != want {
			t.Errorf("%s: %q, %v; want %q", in, got.IP, err, want)
		}
	}
	if _, err := ParsePortRequest([]byte(`{"IP":"\u0000"}`)); err == nil {
		t.Error("a NUL in a string decoded")
	}
}

// The keeper request decodes as the Go keeper's json.Decoder did: the
// first value, whatever follows.
func TestParseKeeperRequest(t *testing.T) {
	for in, want := range map[string]KeeperRequest{
		`{"v":1,"op":"enter"}` + "\n":   {1, "enter"},
		`{"V":2,"OP":"x","more":[]}`:    {2, "x"},
		`{"op":"enter"}{"v":9}`:         {0, "enter"},
		`  {"v":-1}`:                    {-1, ""},
		`{"v":1,"op":"enter"}` + "\nxx": {1, "enter"},
	} {
		got, err := ParseKeeperRequest([]byte(in))
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "\n", `{"v":"1"}`, `{"v":1.0}`, `{"op":5}`, `{"op":"` + strings.Repeat("e", 40) + `"}`, `["enter"]`} {
		if r, err := ParseKeeperRequest([]byte(in)); err == nil {
			t.Errorf("%q decoded: %+v", in, r)
		}
	}
}

// JSON strings that hutch-keeper writes (its refusals) read back as
// what was written.
func TestJSONString(t *testing.T) {
	for _, s := range []string{"", `a"b\c`, "tab\tnl\n\x01", "unknown op \"é\""} {
		q, ok := JSONString(s, 256)
		if !ok {
			t.Fatalf("%q did not fit", s)
		}
		var back string
		if err := json.Unmarshal([]byte(q), &back); err != nil || back != s {
			t.Errorf("%q → %s → %q, %v", s, q, back, err)
		}
	}
	if _, ok := JSONString(strings.Repeat("x", 10), 8); ok {
		t.Error("10 characters fit in 8 bytes")
	}
}

// FuzzKeeperPortRequest: hutch-keeper's decoder of the port driver's
// requests never crashes, never accepts what Go's decoder refuses, and
// agrees with Go on what both accept.
func FuzzKeeperPortRequest(f *testing.F) {
	f.Add([]byte(`{"Type":"connect","Proto":"tcp","IP":"10.0.2.100","Port":8080,"ParentIP":"0.0.0.0","HostGatewayIP":"192.168.1.2","SourceIP":"198.51.100.1","SourcePort":40000}`))
	f.Add([]byte(`{"Type":"init","x":[{"y":null},"\u00e9",-1.5e-3,true,false]}`))
	f.Add([]byte(`{"IP":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParsePortRequest(b)
		if err != nil {
			return
		}
		want, gerr := asGo(b)
		if gerr != nil {
			t.Fatalf("hutch-keeper decodes what Go refuses (%v): %+v", gerr, got)
		}
		if comparable(b) && got != want {
			t.Fatalf("got %+v, Go %+v", got, want)
		}
	})
}

// FuzzKeeperRequest: likewise for keeper.sock's requests, against the Go
// decoder the protocol's JSON was made for.
func FuzzKeeperRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"op":"enter"}` + "\n"))
	f.Add([]byte(`{"v":2,"op":"x","z":{"a":[]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseKeeperRequest(b)
		if err != nil {
			return
		}
		var r keeper.Request
		if gerr := json.NewDecoder(bytes.NewReader(b)).Decode(&r); gerr != nil {
			t.Fatalf("hutch-keeper decodes what Go refuses (%v): %+v", gerr, got)
		}
		if comparable(b) && (got.V != r.V || got.Op != r.Op) {
			t.Fatalf("got %+v, Go %+v", got, r)
		}
	})
}
