package storage

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needIgzip fails the test when igzip is missing: the engine would fall
// back to Go, and the tests would not test what they say.
func needIgzip(t testing.TB) {
	t.Helper()
	if igzipPath() == "" {
		t.Fatal("igzip is not installed (Debian's isal package; bash contrib/test/setup-root.sh installs it)")
	}
}

func gz(t testing.TB, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, p := range parts {
		w := gzip.NewWriter(&b)
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// noisy returns n bytes that compress a little, as files do.
func noisy(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh\n"[r.IntN(9)]
	}
	return b
}

// readerOnly hides everything but Read, as the HTTP body a blob comes in.
type readerOnly struct{ r io.Reader }

func (o readerOnly) Read(p []byte) (int, error) { return o.r.Read(p) }

func decompressAll(t testing.TB, blob []byte) ([]byte, error) {
	t.Helper()
	rc, err := decompressLayer(readerOnly{bytes.NewReader(blob)})
	if err != nil {
		return nil, err
	}
	return drain(rc)
}

// drain reads rc to its end and closes it.
func drain(rc io.ReadCloser) ([]byte, error) {
	out, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return out, err
}

func TestGunzipMatchesGo(t *testing.T) {
	needIgzip(t)
	big := noisy(3<<20, 1)
	for name, blob := range map[string][]byte{
		"one member":   gz(t, big),
		"two members":  gz(t, noisy(70<<10, 2), noisy(1<<20, 3)),
		"empty member": gz(t, nil),
		"empty then":   gz(t, nil, []byte("after")),
	} {
		t.Run(name, func(t *testing.T) {
			rc, err := decompressLayer(readerOnly{bytes.NewReader(blob)})
			if err != nil {
				t.Fatal(err)
			}
			g, ok := rc.(*gunzipProcess)
			if !ok {
				t.Fatalf("gzip went to %T, not igzip", rc)
			}
			if n := pipeCapacity(t, g.out); n != pipeSize {
				t.Errorf("igzip's output pipe holds %d bytes, want %d", n, pipeSize)
			}
			got, err := drain(rc)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(blob))
			if err != nil {
				t.Fatal(err)
			}
			want, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("igzip gave %d bytes, Go %d, not the same", len(got), len(want))
			}
		})
	}
}

func TestGunzipLeavesOtherStreamsToGo(t *testing.T) {
	for name, blob := range map[string][]byte{
		"uncompressed": []byte("not compressed at all, a tar stream would be here"),
		"empty":        nil,
		"two bytes":    {0x1f, 0x8b},
	} {
		t.Run(name, func(t *testing.T) {
			rc, err := decompressLayer(readerOnly{bytes.NewReader(blob)})
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if _, ok := rc.(*gunzipProcess); ok {
				t.Fatal("a stream that is not gzip went to igzip")
			}
			got, err := io.ReadAll(rc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, blob) {
				t.Fatalf("got %q, want the input back", got)
			}
		})
	}
}

// TestGunzipBoundsBigPipes: past cap(bigPipes) processes, igzip gets the
// kernel's default pipes and still decompresses; a process that ended
// gives its slot back.
func TestGunzipBoundsBigPipes(t *testing.T) {
	needIgzip(t)
	want := noisy(300<<10, 8)
	blob := gz(t, want)
	start := func() *gunzipProcess {
		t.Helper()
		rc, err := decompressLayer(readerOnly{bytes.NewReader(blob)})
		if err != nil {
			t.Fatal(err)
		}
		return rc.(*gunzipProcess)
	}
	var held []*gunzipProcess
	for range cap(bigPipes) {
		held = append(held, start())
	}
	g := start()
	if n := pipeCapacity(t, g.out); n >= pipeSize {
		t.Errorf("with every slot taken, igzip's pipe holds %d bytes", n)
	}
	got, err := io.ReadAll(g)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("with default pipes: %d bytes, %v", len(got), err)
	}
	g.Close()
	for _, h := range held {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	g = start()
	defer g.Close()
	if n := pipeCapacity(t, g.out); n != pipeSize {
		t.Errorf("after the others ended, igzip's pipe holds %d bytes, want %d", n, pipeSize)
	}
}

func TestGunzipFallsBackToGo(t *testing.T) {
	want := noisy(200<<10, 7)
	rc, err := decompressWith("/nonexistent/igzip", readerOnly{bytes.NewReader(gz(t, want))})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.(*gunzipProcess); ok {
		rc.Close()
		t.Fatal("a missing igzip was used")
	}
	got, err := drain(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want the %d compressed", len(got), len(want))
	}
}

func TestGunzipReportsBrokenStreams(t *testing.T) {
	needIgzip(t)
	good := gz(t, noisy(1<<20, 4))
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-8] ^= 0xff
	badData := bytes.Clone(good)
	badData[len(badData)/2] ^= 0xff
	for name, blob := range map[string][]byte{
		"truncated":      good[:len(good)/2],
		"no trailer":     good[:len(good)-8],
		"wrong checksum": badCRC,
		"corrupt data":   badData,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decompressAll(t, blob)
			if err == nil {
				t.Fatal("a broken stream decompressed without an error")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not igzip's exit", err)
			}
			if truncated := name == "truncated" || name == "no trailer"; truncated != errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v: is io.ErrUnexpectedEOF = %v, want %v", err, !truncated, truncated)
			}
			t.Log(err)
		})
	}
}

// TestGunzipCloseEndsTheProcess: Close kills igzip at once, and returns
// when the copy of the input ends, at its next read (stageLayer cancels
// the request to end it).
func TestGunzipCloseEndsTheProcess(t *testing.T) {
	needIgzip(t)
	blob := gz(t, noisy(4<<20, 5))
	blocked := make(chan struct{})
	in := &stallingReader{data: blob[:len(blob)/2], blocked: blocked, release: make(chan struct{})}
	rc, err := decompressLayer(in)
	if err != nil {
		t.Fatal(err)
	}
	g := rc.(*gunzipProcess)
	<-blocked // igzip has all the input and waits for more
	closed := make(chan error, 1)
	go func() { closed <- rc.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for !exited(g) {
		if time.Now().After(deadline) {
			t.Fatal("igzip still runs after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the input's read was blocked", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(in.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// exited reports whether g's process is gone or a zombie.
func exited(g *gunzipProcess) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", g.cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] == 'Z'
}

func pipeCapacity(t *testing.T, f any) int {
	t.Helper()
	rc, err := f.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	rc.Control(func(fd uintptr) { n, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}
