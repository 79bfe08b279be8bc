package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// recvFrom writes data on one end of a socket pair, closes it, and reads a
// request from the other, as the runtime server reads a client's.
func recvFrom(t *testing.T, data []byte) (*RuntimeRequest, map[string]*os.File, error) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	go func() {
		w := os.NewFile(uintptr(fds[0]), "client")
		_, _ = w.Write(data)
		_ = w.Close()
	}()
	return RecvRuntimeRequest(fds[1])
}

// A request and its files arrive whole.
func TestRuntimeRequestRoundTrip(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	client := os.NewFile(uintptr(fds[0]), "client")
	defer client.Close()
	defer unix.Close(fds[1])
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := &RuntimeRequest{Op: RuntimeExec, Bundle: "/b", Files: []string{FileStdout}, Process: []byte(`{"args":["` + strings.Repeat("x", 100_000) + `"]}`)}
	if err := SendRuntimeRequest(client, want, []*os.File{w}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, files, err := RecvRuntimeRequest(fds[1])
	if err != nil {
		t.Fatal(err)
	}
	if !equalWire(got, want) || len(files) != 1 || files[FileStdout] == nil {
		t.Fatalf("got %+v with %v", got, files)
	}
	// The file is the pipe's write end.
	if _, err := files[FileStdout].Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	files[FileStdout].Close()
	if b := make([]byte, 2); func() bool { n, _ := r.Read(b); return n != 1 }() {
		t.Error("the passed file is not the pipe")
	}
}

// A line without end, a line too long, files missing for their roles: an
// error each, nothing returned.
func TestRuntimeRequestRefused(t *testing.T) {
	for name, data := range map[string][]byte{
		"no newline":  []byte(`{"op":"exec","bundle":"/b"}`),
		"too long":    append([]byte(`{"op":"exec","bundle":"`), bytes.Repeat([]byte("b"), maxRuntimeRequest+10)...),
		"files named": []byte(`{"op":"exec","bundle":"/b","files":["stdout"]}` + "\n"),
		"not json":    []byte("op=exec\n"),
		"empty":       nil,
	} {
		if req, files, err := recvFrom(t, data); err == nil {
			t.Errorf("%s: accepted as %+v %v", name, req, files)
		}
	}
}

// Whatever a client of the runtime server sends, the request read from it
// is refused or survives a round trip.
func FuzzRecvRuntimeRequest(f *testing.F) {
	f.Add([]byte(`{"op":"create","bundle":"/b"}` + "\n"))
	f.Add([]byte(`{"op":"exec","bundle":"/b","process":{"args":["sh"],"env":["A=\u00e9"]}}` + "\n"))
	f.Add([]byte(`{"op":"delete","bundle":"/b","files":[]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, files, err := recvFrom(t, data)
		if err != nil {
			return
		}
		if len(files) != 0 {
			t.Fatalf("%q: files without any sent: %v", data, files)
		}
		b, err := req.MarshalJSON()
		if err != nil || !json.Valid(b) {
			t.Fatalf("%q re-encoded as invalid %s", data, b)
		}
		var again RuntimeRequest
		if err := again.UnmarshalJSON(b); err != nil || !equalWire(&again, req) {
			t.Fatalf("%q: %+v re-read as %+v (%v)", data, req, again, err)
		}
	})
}

func TestParseRuntimeStatus(t *testing.T) {
	for _, tc := range []struct {
		line string
		want unix.WaitStatus
		ok   bool
	}{
		{"status 768\n", 3 << 8, true},
		{"status 9", 9, true},
		{"status 0\n", 0, true},
		{"", 0, false},
		{"status \n", 0, false},
		{"status x\n", 0, false},
		{"{\"message\":\"x\"}\n", 0, false},
	} {
		ws, ok := ParseRuntimeStatus(tc.line)
		if ok != tc.ok || ok && ws != tc.want {
			t.Errorf("ParseRuntimeStatus(%q) = %v, %v; want %v, %v", tc.line, ws, ok, tc.want, tc.ok)
		}
	}
}
