package idle

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// server accepts on a tracked listener until Accept fails and reports
// that error; the accepted connections stay open until the test closes
// its ends, when the server closes them.
type server struct {
	l    net.Listener
	raw  *net.UnixListener
	path string
	done chan error
}

func serve(t *testing.T, tr *Tracker) *server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	raw, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l, wake := tr.Listener(ctx, raw, true)
	go tr.Run(ctx, wake)
	s := &server{l: l, raw: raw, path: path, done: make(chan error, 1)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				s.done <- err
				return
			}
			go func() {
				b := make([]byte, 1)
				c.Read(b) // until the client closes
				c.Close()
			}()
		}
	}()
	return s
}

// stays checks that the server is still accepting after several idle
// times have passed.
func (s *server) stays(t *testing.T, what string, d time.Duration) {
	t.Helper()
	select {
	case err := <-s.done:
		t.Fatalf("%s: the server stopped: %v", what, err)
	case <-time.After(5 * d):
	}
}

func (s *server) exits(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-s.done:
		if !errors.Is(err, ErrIdle) {
			t.Fatalf("%s: Accept ended with %v, want ErrIdle", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no idle exit", what)
	}
}

func TestExitWaitsForConnections(t *testing.T) {
	const exit = 200 * time.Millisecond
	tr := New(Options{Exit: exit, Tick: 10 * time.Millisecond})
	s := serve(t, tr)
	c, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	s.stays(t, "a client connected", exit)
	if n := tr.Conns(); n != 1 {
		t.Errorf("Conns() = %d with one client, want 1", n)
	}
	c.Close()
	s.exits(t, "the client gone")

	// A client that comes after the decision is not lost: it waits in
	// the socket (systemd's, in a socket-activated daemon) for whoever
	// accepts next.
	late, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatalf("a client after the idle exit: %v", err)
	}
	defer late.Close()
	s.raw.SetDeadline(time.Time{})
	got, err := s.raw.Accept()
	if err != nil {
		t.Fatalf("the next start's Accept: %v", err)
	}
	got.Close()
}

func TestExitWaitsForBusy(t *testing.T) {
	const exit = 200 * time.Millisecond
	var busy atomic.Bool
	busy.Store(true)
	tr := New(Options{Exit: exit, Tick: 10 * time.Millisecond, Busy: func(context.Context) bool { return busy.Load() }})
	s := serve(t, tr)
	s.stays(t, "a container running", exit)
	busy.Store(false)
	s.exits(t, "no container running")
}

func TestNoExitWithoutIdleExit(t *testing.T) {
	tr := New(Options{Tick: 10 * time.Millisecond})
	s := serve(t, tr)
	s.stays(t, "no idle exit asked", 100*time.Millisecond)
}

func TestReleaseOncePerQuietSpell(t *testing.T) {
	released := make(chan struct{}, 10)
	tr := New(Options{Quiet: 50 * time.Millisecond, Tick: 10 * time.Millisecond, OnRelease: func(time.Duration) { released <- struct{}{} }})
	s := serve(t, tr)
	wait := func(what string) {
		t.Helper()
		select {
		case <-released:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no release", what)
		}
	}
	wait("start-up")
	select {
	case <-released:
		t.Fatal("memory released again with no activity since")
	case <-time.After(500 * time.Millisecond):
	}
	// A client that connects and stays, as an SDK's keep-alive
	// connection does: its requests are activity, its silence is not.
	c, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wait("a client connected and quiet")
	c.Write([]byte("x")) // the server's read ends; it closes its end
	wait("after the client's request")
}

// A tracked connection keeps what hijacked streams use of the socket: its
// descriptor (NetConn) and its half-close, which lets the client read to
// EOF while the server still drains its input.
func TestTrackedConnHalfCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	raw, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tr := New(Options{})
	l, _ := tr.Listener(context.Background(), raw, false)
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(interface{ NetConn() net.Conn }).NetConn().(*net.UnixConn); !ok {
		t.Fatal("NetConn is not the socket")
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("a tracked connection has no CloseWrite")
	}
	if _, err := c.Write([]byte("out")); err != nil {
		t.Fatal(err)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(client); err != nil || string(b) != "out" {
		t.Fatalf("the client read %q, %v; want out and EOF", b, err)
	}
	if _, err := client.Write([]byte("in")); err != nil {
		t.Fatalf("the client's half stays open: %v", err)
	}
}

type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }

// The socket is found under any number of trackers.
func TestUnixSocketUnwraps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	raw, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := UnixSocket(wrapped{wrapped{c}}); got != c {
		t.Fatalf("UnixSocket of a wrapped socket = %v", got)
	}
	if got := UnixSocket(wrapped{}); got != nil {
		t.Fatalf("UnixSocket of nothing = %v", got)
	}
}
