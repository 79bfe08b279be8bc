package server

import (
	"bufio"
	"errors"
	"os"
	"strconv"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

func (s *server) accept() {
	for {
		conn, err := s.ln.accept()
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

func (s *server) handle(conn *os.File) {
	br := bufio.NewReader(conn)
	reply := func(r *wire.Response) { _ = wire.WriteJSONLine(conn, r) }
	fail := func(err error) { reply(wire.ErrorResponse(err)) }
	var req wire.Request
	if err := wire.ReadJSONLine(br, &req); err != nil {
		// An exec with an environment of more than MaxLine bytes gets
		// an answer; a client that hung up does not.
		if errors.Is(err, wire.ErrLineTooLong) {
			fail(err)
		}
		return
	}
	switch req.Op {
	case wire.OpState:
		st := s.state()
		reply(&wire.Response{State: &st})
	case wire.OpStart:
		if err := s.start(); err != nil {
			fail(err)
			return
		}
		reply(&wire.Response{Pid: s.pid})
	case wire.OpKill:
		if err := s.kill(req.Signal); err != nil {
			fail(err)
			return
		}
		reply(&wire.Response{})
	case wire.OpPause, wire.OpResume:
		if err := s.freeze(req.Op == wire.OpPause); err != nil {
			fail(err)
			return
		}
		reply(&wire.Response{})
	case wire.OpResize:
		if err := s.resize(req); err != nil {
			fail(err)
			return
		}
		reply(&wire.Response{})
	case wire.OpWait:
		if req.ExecID != "" {
			st, err := s.waitExec(req.ExecID)
			if err != nil {
				fail(err)
				return
			}
			reply(&wire.Response{Exec: &st})
			return
		}
		<-s.exited
		st := s.state()
		reply(&wire.Response{Exit: st.Exit})
	case wire.OpAttach:
		s.attach(conn, br, req)
	case wire.OpExec:
		s.exec(conn, br, req)
	case wire.OpExecState:
		st, err := s.execState(req.ExecID)
		if err != nil {
			fail(err)
			return
		}
		reply(&wire.Response{Exec: &st})
	default:
		fail(wire.Wrap("unknown op "+strconv.Quote(req.Op), errdefs.ErrNotImplemented))
	}
}

func (s *server) resize(req wire.Request) error {
	pr := s.init
	if req.ExecID != "" {
		var err error
		if pr, err = s.execStdio(req.ExecID); err != nil {
			return err
		}
	}
	if err := pr.resize(req.Height, req.Width); err != nil {
		return wire.Wrap("resize", err, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// attach streams the init's output to the client until it ends, and the
// client's stdin to the container.
func (s *server) attach(conn *os.File, br *bufio.Reader, req wire.Request) {
	streams := [3]bool{wire.StreamStdout: req.Stdout, wire.StreamStderr: req.Stderr}
	if s.cfg.Tty {
		// A tty has one output stream; Docker sends it as stdout.
		streams[wire.StreamStdout] = req.Stdout || req.Stderr
	}
	a, err := s.init.attach(conn, streams, &wire.Response{Pid: s.pid})
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
