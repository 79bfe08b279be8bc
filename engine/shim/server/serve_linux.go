package server

import (
	"bufio"
	"fmt"
	"net"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim"
)

func (s *server) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer conn.Close()
			s.handle(conn)
		}()
	}
}

func (s *server) handle(conn net.Conn) {
	br := bufio.NewReader(conn)
	var req shim.Request
	if err := shim.ReadJSONLine(br, &req); err != nil {
		return
	}
	reply := func(r *shim.Response) { _ = shim.WriteJSONLine(conn, r) }
	fail := func(err error) { reply(shim.ErrorResponse(err)) }
	switch req.Op {
	case shim.OpState:
		st := s.state()
		reply(&shim.Response{State: &st})
	case shim.OpStart:
		if err := s.start(); err != nil {
			fail(err)
			return
		}
		reply(&shim.Response{Pid: s.pid})
	case shim.OpKill:
		if err := s.kill(req.Signal); err != nil {
			fail(err)
			return
		}
		reply(&shim.Response{})
	case shim.OpPause, shim.OpResume:
		if err := s.freeze(req.Op == shim.OpPause); err != nil {
			fail(err)
			return
		}
		reply(&shim.Response{})
	case shim.OpResize:
		if err := s.resize(req); err != nil {
			fail(err)
			return
		}
		reply(&shim.Response{})
	case shim.OpWait:
		<-s.exited
		st := s.state()
		reply(&shim.Response{Exit: st.Exit})
	case shim.OpAttach:
		s.attach(conn, br, req)
	case shim.OpExec:
		s.exec(conn, br, req)
	case shim.OpExecState:
		st, err := s.execState(req.ExecID)
		if err != nil {
			fail(err)
			return
		}
		reply(&shim.Response{Exec: &st})
	default:
		fail(fmt.Errorf("unknown op %q: %w", req.Op, errdefs.ErrNotImplemented))
	}
}

func (s *server) resize(req shim.Request) error {
	pr := s.init
	if req.ExecID != "" {
		e, err := s.lookupExec(req.ExecID)
		if err != nil {
			return err
		}
		pr = e.proc
	}
	if err := pr.resize(req.Height, req.Width); err != nil {
		return fmt.Errorf("resize: %w: %w", err, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// attach streams the init's output to the client until it ends, and the
// client's stdin to the container.
func (s *server) attach(conn net.Conn, br *bufio.Reader, req shim.Request) {
	streams := [3]bool{shim.StreamStdout: req.Stdout, shim.StreamStderr: req.Stderr}
	if s.cfg.Tty {
		// A tty has one output stream; Docker sends it as stdout.
		streams[shim.StreamStdout] = req.Stdout || req.Stderr
	}
	a, err := s.init.attach(conn, streams, &shim.Response{Pid: s.pid})
	if err != nil {
		return
	}
	// Docker's StdinOnce: the container's stdin closes when the stdin of
	// the attached client ends, by EOF or by detaching.
	wantStdin := req.Stdin && s.cfg.OpenStdin
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		s.init.serveStdin(br, wantStdin, func() {
			if wantStdin && s.cfg.StdinOnce {
				s.init.closeStdin()
			}
		})
	}()
	select {
	case <-a.done:
	case <-gone:
	}
	s.init.detach(a)
}
