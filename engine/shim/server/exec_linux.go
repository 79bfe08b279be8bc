package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim"
)

// execProc is a process started in the running container (docker exec): a
// child of the shim in the container's namespaces and cgroup.
type execProc struct {
	id   string
	proc *proc
	pid  int
	done chan struct{} // closed after exit and end of output
	code int
}

func (s *server) lookupExec(id string) (*execProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.execs[id]
	if !ok {
		return nil, fmt.Errorf("exec %s: %w", id, errdefs.ErrNotFound)
	}
	return e, nil
}

func (s *server) execState(id string) (shim.ExecState, error) {
	e, err := s.lookupExec(id)
	if err != nil {
		return shim.ExecState{}, err
	}
	st := shim.ExecState{ID: id, Pid: e.pid, Running: true}
	select {
	case <-e.done:
		st.Running, st.ExitCode = false, e.code
	default:
	}
	return st, nil
}

// exec starts req.Process and, unless detached, streams it on conn until
// it has exited, ending with a StreamExit frame.
func (s *server) exec(conn net.Conn, br *bufio.Reader, req shim.Request) {
	fail := func(err error) { _ = shim.WriteJSONLine(conn, shim.ErrorResponse(err)) }
	e, err := s.startExec(req)
	if err != nil {
		fail(err)
		return
	}
	pr := e.proc
	if req.Detach {
		pr.pump()
		_ = shim.WriteJSONLine(conn, &shim.Response{Pid: e.pid})
		return
	}
	streams := [3]bool{shim.StreamStdout: req.Stdout, shim.StreamStderr: req.Stderr}
	if pr.tty {
		streams[shim.StreamStdout] = req.Stdout || req.Stderr
	}
	// Registered before the output pumps start: nothing is lost.
	a, err := pr.attach(conn, streams, &shim.Response{Pid: e.pid})
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
	b, _ := json.Marshal(shim.ExitStatus{ExitCode: e.code, FinishedAt: time.Now().UTC()})
	_ = a.fw.WriteFrame(shim.StreamExit, b)
	pr.detach(a)
}

func (s *server) startExec(req shim.Request) (*execProc, error) {
	if req.ExecID == "" || req.Process == nil || len(req.Process.Args) == 0 {
		return nil, fmt.Errorf("exec needs an id and a process with args: %w", errdefs.ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != shim.StatusRunning {
		return nil, fmt.Errorf("container %s is not running: %w", s.cfg.ID, errdefs.ErrConflict)
	}
	if _, dup := s.execs[req.ExecID]; dup {
		return nil, fmt.Errorf("exec %s already exists: %w", req.ExecID, errdefs.ErrAlreadyExists)
	}
	p, err := newProcess(req.Process, false)
	if err != nil {
		return nil, err
	}
	pr, err := newProc(p, req.Process.Terminal, req.Stdin && !req.Detach)
	if err != nil {
		return nil, err
	}
	pid, exited, err := s.reaper.spawn(func() (int, error) {
		if err := s.container.Run(p); err != nil {
			return 0, err
		}
		return p.Pid()
	})
	if err != nil {
		pr.closeAll()
		return nil, shim.NewStartError(err.Error())
	}
	if err := pr.started(); err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
		return nil, err
	}
	e := &execProc{id: req.ExecID, proc: pr, pid: pid, done: make(chan struct{})}
	s.execs[req.ExecID] = e
	go func() {
		ws := <-exited
		pr.finish(outputGrace)
		e.code = exitCode(ws)
		close(e.done)
	}()
	return e, nil
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
