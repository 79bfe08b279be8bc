package filter

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

var sample = &Program{Flags: 4, Insns: []unix.SockFilter{
	{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 0, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000},
}}

func TestProgramRoundTrip(t *testing.T) {
	p, err := Decode(sample.Encode())
	if err != nil || p.Flags != sample.Flags || !slices.Equal(p.Insns, sample.Insns) {
		t.Fatalf("Decode(Encode) = %+v, %v", p, err)
	}
	b := sample.Encode()
	for _, bad := range [][]byte{nil, []byte("HUTCHBPF"), b[:len(b)-1], append(slices.Clone(b), 0), []byte("HUTCHBPX" + string(b[8:]))} {
		if _, err := Decode(bad); !errors.Is(err, errFormat) {
			t.Errorf("Decode(%q): %v", bad, err)
		}
	}
}

// The init reads its program from a sealed memfd, and nothing else.
func TestFileReadFd(t *testing.T) {
	f, err := File(sample.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := readFd(int(f.Fd()))
	if err != nil || p == nil || !slices.Equal(p.Insns, sample.Insns) {
		t.Fatalf("readFd = %+v, %v", p, err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the memfd is writable after sealing")
	}
	fds := make([]int, 2)
	if err := unix.Pipe2(fds, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if p, err := readFd(fds[0]); p != nil || err != nil {
		t.Errorf("readFd(pipe) = %+v, %v", p, err)
	}
	if p, err := readFd(1 << 20); p != nil || err != nil {
		t.Errorf("readFd(closed) = %+v, %v", p, err)
	}
}

// The program passes from runtime to init: the decoder takes any bytes.
func FuzzDecode(f *testing.F) {
	f.Add(sample.Encode())
	f.Add([]byte("HUTCHBPF\x00\x00\x00\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		if q, err := Decode(p.Encode()); err != nil || q.Flags != p.Flags || !slices.Equal(q.Insns, p.Insns) {
			t.Fatalf("%q: re-decoding gave %+v, %v", b, q, err)
		}
	})
}
