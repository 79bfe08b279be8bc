package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	big := bytes.Repeat([]byte("x"), maxFrame+10)
	frames := []struct {
		stream byte
		p      []byte
	}{{StreamStdout, []byte("out")}, {StreamStdin, nil}, {StreamStderr, big}}
	if err := fw.WriteLine(&Response{Pid: 7}); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := fw.WriteFrame(f.stream, f.p); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(&buf)
	var resp Response
	if err := ReadJSONLine(br, &resp); err != nil || resp.Pid != 7 {
		t.Fatalf("line: %+v %v", resp, err)
	}
	var got []byte
	var streams []byte
	for {
		s, p, err := ReadFrame(br, nil)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
		if s == StreamStderr {
			got = append(got, p...)
		}
	}
	// The big payload is split; stream ids survive.
	if !bytes.Equal(streams, []byte{StreamStdout, StreamStdin, StreamStderr, StreamStderr}) || !bytes.Equal(got, big) {
		t.Errorf("streams %v, stderr %d bytes", streams, len(got))
	}
}

// TestLongLine: a line longer than the reader's buffer is gathered (an
// exec's process spec with a big environment), up to MaxLine; the frames
// after it are still read.
func TestLongLine(t *testing.T) {
	env := strings.Repeat("x", 6000)
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	if err := fw.WriteLine(&Request{Op: OpExec, Process: RawJSON(`{"env":["X=` + env + `"]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteFrame(StreamStdin, []byte("in")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(&buf, 64)
	var req Request
	if err := ReadJSONLine(br, &req); err != nil {
		t.Fatal(err)
	}
	if req.Op != OpExec || !strings.Contains(string(req.Process), env) {
		t.Errorf("request %q, process of %d bytes", req.Op, len(req.Process))
	}
	if s, p, err := ReadFrame(br, nil); err != nil || s != StreamStdin || string(p) != "in" {
		t.Errorf("frame after the line: %d %q %v", s, p, err)
	}

	huge := `{"op":"exec","process":{"env":["X=` + strings.Repeat("x", MaxLine) + `"]}}` + "\n"
	err := ReadJSONLine(bufio.NewReaderSize(strings.NewReader(huge), 64), &req)
	if !errors.Is(err, ErrLineTooLong) || !errdefs.IsInvalidArgument(err) {
		t.Errorf("line of %d bytes: %v, want ErrLineTooLong", len(huge), err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{2, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			_, p, err := ReadFrame(r, nil)
			if err != nil {
				return
			}
			if len(p) > maxFrame {
				t.Fatalf("frame of %d bytes accepted", len(p))
			}
		}
	})
}

func FuzzReadJSONLine(f *testing.F) {
	f.Add([]byte(`{"op":"attach","stdin":true}` + "\n"))
	f.Add([]byte(`{"op":"exec","process":{"args":["sh"]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req Request
		_ = ReadJSONLine(bufio.NewReader(bytes.NewReader(data)), &req)
	})
}
