package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// The plain types have the fields and tags of the wire types but not their
// methods: encoding/json handles them by reflection, the reference the
// hand-written codecs are held to.
type (
	plainRequest    Request
	plainExitStatus ExitStatus
	plainConfig     Config
)

// codec is what every wire type implements.
type codec interface {
	MarshalJSON() ([]byte, error)
	UnmarshalJSON([]byte) error
}

var (
	t1 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	t2 = time.Date(2026, 11, 22, 10, 0, 3, 0, time.FixedZone("x", 3600))
)

// Each type reads back what it writes, and its JSON is what encoding/json
// makes of the same fields (the struct tags, without the methods).
func TestCodecRoundTrip(t *testing.T) {
	exit := &ExitStatus{ExitCode: 137, OOMKilled: true, StartedAt: t1, FinishedAt: t2, Error: "boom <&>"}
	tests := []struct {
		name   string
		v      codec
		fresh  func() codec
		shadow any
	}{
		{"request", &Request{Op: OpExec, Signal: 9, Height: 24, Width: 80, Stdin: true, Stdout: true, Stderr: true, ExecID: "e1",
			Process: []byte(`{"args":["sh","-c","echo \"hi\""],"terminal":true}`), Tty: true, Detach: true},
			func() codec { return &Request{} }, new(plainRequest)},
		{"empty request", &Request{Op: OpState}, func() codec { return &Request{} }, nil},
		{"response", &Response{Error: "e", Class: "start", ExitCode: 127, Pid: 3,
			State: &State{ID: "c", Pid: 3, ShimPid: 2, Status: StatusStopped, StartedAt: t1, Exit: exit, ExitFile: "/x/exit.json", Tty: true, OpenStdin: true},
			Exit:  exit, Exec: &ExecState{ID: "e", Pid: 4, Running: true, ExitCode: 2}},
			func() codec { return &Response{} }, nil},
		{"exit without start", &ExitStatus{ExitCode: 1, FinishedAt: t1}, func() codec { return &ExitStatus{} }, new(plainExitStatus)},
		{"config", &Config{ID: "c", StateDir: "/s", SocketPath: "/s.sock", LogPath: "/l", LogRotation: jsonlog.Rotation{MaxSize: 1 << 20, MaxFiles: 3, Compress: true},
			LogAttrs: map[string]string{"b": "2", "a": "<1>"},
			ExitFile: "/e", Tty: true, OpenStdin: true, StdinOnce: true, Height: 24, Width: 80, Debug: true, RuntimeBinary: "/bin/hutch-runtime", RuntimeServer: "/run/rt.sock"},
			func() codec { return &Config{} }, new(plainConfig)},
		{"runtime request", &RuntimeRequest{Op: RuntimeExec, Bundle: "/b", Files: []string{FileLog, FileStdin}, Process: []byte(`{"args":["true"]}`)},
			func() codec { return &RuntimeRequest{} }, nil},
		{"runtime reply", &RuntimeReply{Response: Response{Pid: 5}, Fifo: "/s/c/exec.fifo", NeedsDelete: true, StateDir: "/s/c", OOMKilled: true},
			func() codec { return &RuntimeReply{} }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.v.MarshalJSON()
			if err != nil || !json.Valid(b) {
				t.Fatalf("%s: %v", b, err)
			}
			got := tc.fresh()
			if err := got.UnmarshalJSON(b); err != nil {
				t.Fatalf("read back %s: %v", b, err)
			}
			if !equalWire(got, tc.v) {
				t.Errorf("%s read back as %+v, want %+v", b, got, tc.v)
			}
			if tc.shadow == nil {
				return
			}
			// encoding/json reads ours into the tagged fields, and writes
			// them back byte for byte.
			if err := json.Unmarshal(b, tc.shadow); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(tc.shadow)
			if !bytes.Equal(again, b) {
				t.Errorf("ours:          %s\nencoding/json: %s", b, again)
			}
		})
	}
}

// equalWire compares times by instant (a zone read back is a fixed one).
func equalWire(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return reflect.TypeOf(a) == reflect.TypeOf(b) && bytes.Equal(ja, jb)
}

// Unknown keys are skipped, nulls leave fields alone, and wrong kinds are
// errors, never panics.
func TestCodecLenient(t *testing.T) {
	var r Request
	if err := r.UnmarshalJSON([]byte(`{"op":"kill","new":{"a":[1,2]},"signal":null,"execId":"x"}`)); err != nil || r.Op != "kill" || r.ExecID != "x" || r.Signal != 0 {
		t.Errorf("%+v %v", r, err)
	}
	for _, bad := range []string{`{"op":1}`, `{"signal":"9"}`, `{"h":70000}`, `{"stdin":"yes"}`, `[]`, `{"op":"x"`, `{"op":"x"} x`} {
		var r Request
		if err := r.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted as %+v", bad, r)
		}
	}
}

// Whatever a client sends, the shim's decoder returns or errs, and what it
// returns survives a round trip.
func FuzzRequestCodec(f *testing.F) {
	f.Add([]byte(`{"op":"attach","stdin":true,"stdout":true}`))
	f.Add([]byte(`{"op":"exec","execId":"a","process":{"args":["sh"],"env":["A=\u00e9"]},"tty":true}`))
	f.Add([]byte(`{"op":"resize","h":24,"w":80}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Request
		if err := ReadJSONLine(bufio.NewReader(bytes.NewReader(append(data, '\n'))), &r); err != nil {
			return
		}
		b, err := r.MarshalJSON()
		if err != nil || !json.Valid(b) {
			t.Fatalf("%q re-encoded as invalid %s", data, b)
		}
		var again Request
		if err := again.UnmarshalJSON(b); err != nil || !equalWire(&again, &r) {
			t.Fatalf("%q: %+v re-read as %+v (%v)", data, r, again, err)
		}
	})
}
