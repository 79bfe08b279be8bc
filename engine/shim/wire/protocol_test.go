package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
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
