package server

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/pidfd"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// The status of a process that another reaps: as it ended where the
// kernel tells, else 255.
func TestExitOfPidfd(t *testing.T) {
	known := pidfd.KernelKeepsExit()
	for _, tc := range []struct {
		script string
		want   func(unix.WaitStatus) bool
	}{
		{"exit 7", func(ws unix.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 7 }},
		{"kill -9 $$", func(ws unix.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGKILL }},
	} {
		cmd := exec.Command("/bin/sh", "-c", "read x; "+tc.script)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pf, err := pidfd.Open(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		// Its parent (this test's os/exec) reaps it; exitOfPidfd only
		// watches.
		go func() { _ = cmd.Wait() }()
		stdin.Write([]byte("go\n"))
		ws := exitOfPidfd(pf)
		switch {
		case known && !tc.want(ws):
			t.Errorf("%s: status %#x", tc.script, int(ws))
		case !known && (!ws.Exited() || ws.ExitStatus() != 255):
			t.Errorf("%s: status %#x on a kernel without PIDFD_INFO_EXIT, want exit 255", tc.script, int(ws))
		}
	}
	if ws := exitOfPidfd(nil); !ws.Exited() || ws.ExitStatus() != 255 {
		t.Errorf("no pidfd: status %#x, want exit 255", int(ws))
	}
}

// serverAt listens on a unix socket in a temporary directory, as the
// runtime server does, and returns a shim server that asks it.
func serverAt(t *testing.T) (*server, *net.UnixListener) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rt.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &server{cfg: &wire.Config{ID: "c", RuntimeServer: path}, log: &logger{id: "c"}}, ln
}

// answer accepts one connection, reads its request, and has respond
// write on it.
func answer(t *testing.T, ln *net.UnixListener, respond func(c *net.UnixConn)) {
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		f, err := c.File()
		if err != nil {
			return
		}
		defer f.Close()
		if _, files, err := wire.RecvRuntimeRequest(int(f.Fd())); err == nil {
			for _, fl := range files {
				fl.Close()
			}
			respond(c)
		}
	}()
}

var pauseReq = &wire.RuntimeRequest{Op: wire.RuntimePause, Bundle: "/b"}

// A request still queued when the server stops is refused unread: the
// shim makes it with a runtime of its own (ok false, no error).
func TestAskServerStopping(t *testing.T) {
	s, ln := serverAt(t)
	raw, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		// Once the connection is queued, the listener closes.
		unix.Poll([]unix.PollFd{{Fd: int32(raw.Fd()), Events: unix.POLLIN}}, -1)
		ln.Close()
		raw.Close()
	}()
	reply, exited, ok, err := s.askServer(pauseReq, nil)
	if ok || err != nil || reply != nil || exited != nil {
		t.Errorf("queued request at the server's stop: %v %v %v %v, want a fallback", reply, exited, ok, err)
	}
}

// A server that read the request and died may have done the step: an
// error, never a second try.
func TestAskServerDiesAfterRead(t *testing.T) {
	s, ln := serverAt(t)
	answer(t, ln, func(*net.UnixConn) {})
	if _, _, ok, err := s.askServer(pauseReq, nil); !ok || err == nil {
		t.Errorf("server died after reading: ok %v, err %v; want the error", ok, err)
	}
}

// A process's status comes on the line after the reply; if the server
// dies first, from the kernel (where it records it) or as 255.
func TestAskServerStatus(t *testing.T) {
	s, ln := serverAt(t)
	answer(t, ln, func(c *net.UnixConn) {
		wire.WriteJSONLine(c, &wire.RuntimeReply{Response: wire.Response{Pid: os.Getpid()}})
		c.Write([]byte(wire.RuntimeStatusPrefix + "1536\n"))
	})
	_, exited, ok, err := s.askServer(pauseReq, nil)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ws := <-exited; !ws.Exited() || ws.ExitStatus() != 6 {
		t.Errorf("status %#x, want exit 6", int(ws))
	}

	cmd := exec.Command("/bin/sh", "-c", "read x; exit 9")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	answer(t, ln, func(c *net.UnixConn) {
		wire.WriteJSONLine(c, &wire.RuntimeReply{Response: wire.Response{Pid: cmd.Process.Pid}})
	})
	_, exited, ok, err = s.askServer(pauseReq, nil)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	go func() { _ = cmd.Wait() }()
	stdin.Write([]byte("\n"))
	ws := <-exited
	if want := 9; !pidfd.KernelKeepsExit() {
		want = 255
		if ws.ExitStatus() != want {
			t.Errorf("status %#x without PIDFD_INFO_EXIT, want exit %d", int(ws), want)
		}
	} else if !ws.Exited() || ws.ExitStatus() != want {
		t.Errorf("status %#x after the server's death, want exit %d", int(ws), want)
	}
}
