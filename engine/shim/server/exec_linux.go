package server

import (
	"bufio"
	"os"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// execProc is a process started in the running container (docker exec): a
// child of the shim in the container's namespaces and cgroup.
type execProc struct {
	id   string
	pid  int
	done chan struct{} // closed after exit and end of output

	// Set under server.mu when the exec ends, before done is closed. An
	// ended exec is kept as these few fields (its stdio dropped): a
	// health check every second leaves 600 records in execKeep.
	code  int
	ended time.Time
	proc  *proc // nil once ended
}

func (s *server) lookupExec(id string) (*execProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execLocked(id)
}

// execLocked is lookupExec with s.mu held.
func (s *server) execLocked(id string) (*execProc, error) {
	e, ok := s.execs[id]
	if !ok {
		return nil, wire.Wrap("exec "+id, errdefs.ErrNotFound)
	}
	return e, nil
}

func (s *server) execState(id string) (wire.ExecState, error) {
	e, err := s.lookupExec(id)
	if err != nil {
		return wire.ExecState{}, err
	}
	st := wire.ExecState{ID: id, Pid: e.pid, Running: true}
	select {
	case <-e.done:
		st.Running, st.ExitCode = false, e.code
	default:
	}
	return st, nil
}

// waitExec returns the state of exec id once it has ended: the engine
// learns so the end of a detached exec (Docker's exec_die event).
func (s *server) waitExec(id string) (wire.ExecState, error) {
	e, err := s.lookupExec(id)
	if err != nil {
		return wire.ExecState{}, err
	}
	<-e.done
	return s.execState(id)
}

// exec starts req.Process and, unless detached, streams it on conn until
// it has exited, ending with a StreamExit frame.
func (s *server) exec(conn *os.File, br *bufio.Reader, req wire.Request) {
	fail := func(err error) { _ = wire.WriteJSONLine(conn, wire.ErrorResponse(err)) }
	e, err := s.startExec(req)
	if err != nil {
		fail(err)
		return
	}
	pr := e.proc
	if req.Detach {
		pr.pump()
		_ = wire.WriteJSONLine(conn, &wire.Response{Pid: e.pid})
		return
	}
	streams := [3]bool{wire.StreamStdout: req.Stdout, wire.StreamStderr: req.Stderr}
	if pr.tty {
		streams[wire.StreamStdout] = req.Stdout || req.Stderr
	}
	// Registered before the output pumps start: nothing is lost.
	a, err := pr.attach(conn, streams, &wire.Response{Pid: e.pid})
	pr.pump()
	if err != nil {
		return
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		pr.serveStdin(br, req.Stdin, pr.closeStdin)
	}()
	select {
	case <-e.done:
	case <-gone:
		// The client left; the process goes on, as in Docker.
		pr.detach(a)
		return
	}
	b, _ := (&wire.ExitStatus{ExitCode: e.code, FinishedAt: time.Now().UTC()}).MarshalJSON()
	_ = a.fw.WriteFrame(wire.StreamExit, b)
	pr.detach(a)
}

// startExec has hutch-runtime start req.Process in the container. The
// lock is held throughout, so that an exec id is started once.
func (s *server) startExec(req wire.Request) (*execProc, error) {
	if req.ExecID == "" || len(req.Process) == 0 {
		return nil, wire.Wrap("exec needs an id and a process", errdefs.ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != wire.StatusRunning {
		return nil, wire.Wrap("container "+s.cfg.ID+" is not running", errdefs.ErrConflict)
	}
	if _, dup := s.execs[req.ExecID]; dup {
		return nil, wire.Wrap("exec "+req.ExecID+" already exists", errdefs.ErrAlreadyExists)
	}
	pr, roles, files, err := newProc(req.Tty, req.Stdin && !req.Detach)
	if err != nil {
		return nil, err
	}
	reply, exited, err := s.runtime(&wire.RuntimeRequest{Op: wire.RuntimeExec, Bundle: s.bundle, Files: roles, Process: req.Process}, files)
	if err != nil {
		pr.closeAll()
		return nil, err
	}
	pid := reply.Pid
	if err := pr.started(); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return nil, err
	}
	e := &execProc{id: req.ExecID, proc: pr, pid: pid, done: make(chan struct{})}
	s.execs[req.ExecID] = e
	go func() {
		ws := <-exited
		pr.finish(outputGrace)
		s.mu.Lock()
		e.code, e.ended, e.proc = exitCode(ws), time.Now(), nil
		if !s.forgetArmed {
			s.armForget(execKeep)
		}
		s.mu.Unlock()
		close(e.done)
		s.settler.soon()
	}()
	return e, nil
}

// execStdio is the stdio of a running exec (for a resize).
func (s *server) execStdio(id string) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.execLocked(id)
	if err != nil {
		return nil, err
	}
	if e.proc == nil {
		return nil, wire.Wrap("exec "+id+" has ended", errdefs.ErrFailedPrecondition)
	}
	return e.proc, nil
}

// execKeep is how long the shim remembers an exec that ended, for the
// engine to ask its exit code (a detached exec's, once inspected). Not
// for the container's whole life: a health check execs every few
// seconds. Docker forgets an ended exec five to ten minutes after it
// ended (its exec GC runs every five minutes).
const execKeep = 10 * time.Minute

// forgetEnded drops the records of execs that ended execKeep ago or more
// and arms the timer for the next one due. One timer for all of them, not
// one per exec. Called with s.mu held.
func (s *server) forgetEnded(now time.Time) {
	var next time.Duration
	for id, e := range s.execs {
		if e.ended.IsZero() {
			continue
		}
		left := execKeep - now.Sub(e.ended)
		if left <= 0 {
			delete(s.execs, id)
		} else if next == 0 || left < next {
			next = left
		}
	}
	if next > 0 {
		// Not sooner than a minute: with a health check every second a
		// record is then kept up to a minute longer, and the shim wakes
		// once a minute for them instead of at every end.
		s.armForget(max(next, time.Minute))
	}
}

// armForget has forgetEnded run after d. Execs end in order of their
// ended times, so an armed timer is never later than any record's due.
func (s *server) armForget(d time.Duration) {
	s.forgetArmed = true
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.forgetArmed = false
		s.forgetEnded(time.Now())
	})
}

// finishExecs waits (bounded) for exec processes to end with the init:
// the kernel kills them with the container's pid namespace.
func (s *server) finishExecs() {
	s.mu.Lock()
	execs := make([]*execProc, 0, len(s.execs))
	for _, e := range s.execs {
		execs = append(execs, e)
	}
	s.mu.Unlock()
	deadline := time.After(outputGrace)
	for _, e := range execs {
		select {
		case <-e.done:
		case <-deadline:
			return
		}
	}
}
