package buildkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/moby/buildkit/executor"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// runProcess has the runtime server make the process of req (create: a
// container's init; exec: a process in one), with process's stdio, and
// returns its exit code once it has ended and its output is copied. The
// context's end kills it; signals from BuildKit are passed on. started
// runs once the process runs.
func (e *runExecutor) runProcess(ctx context.Context, req *wire.RuntimeRequest, process executor.ProcessInfo, started func()) (int, error) {
	sockPath := e.runtime.Socket()
	if sockPath == "" {
		return 0, errors.New("hutch-runtime serve did not start (see its log under the build state directory)")
	}
	io, err := newStdio(process)
	if err != nil {
		return 0, err
	}
	defer io.closeAll()
	logf, err := os.OpenFile(req.Bundle+"/runtime.log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	req.Files = []string{wire.FileLog, wire.FileStdin, wire.FileStdout, wire.FileStderr}
	files := []*os.File{logf, io.stdin, io.stdout, io.stderr}

	sock, err := dialUnix(sockPath)
	if err != nil {
		return 0, fmt.Errorf("runtime server: %w", err)
	}
	defer sock.Close()
	br := bufio.NewReader(sock)
	var reply wire.RuntimeReply
	if err := wire.SendRuntimeRequest(sock, req, files); err != nil {
		return 0, err
	}
	if err := wire.ReadJSONLine(br, &reply); err != nil {
		return 0, fmt.Errorf("runtime server: %w", err)
	}
	io.closeChildEnds()
	if err := reply.Err(); err != nil {
		b, _ := os.ReadFile(req.Bundle + "/runtime.log")
		if len(b) > 0 {
			return 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(b)))
		}
		return 0, err
	}
	pid := reply.Pid
	if req.Op == wire.RuntimeCreate {
		defer removeState(reply.StateDir)
	}

	// The status line comes once the process has ended.
	code := 255
	ended := make(chan struct{})
	go func() {
		line, err := br.ReadString('\n')
		if ws, ok := wire.ParseRuntimeStatus(line); err == nil && ok {
			code = exitCode(ws)
		}
		close(ended)
	}()
	if req.Op == wire.RuntimeCreate {
		if err := wire.ReleaseInit(reply.Fifo, ended); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			<-ended
			return 0, fmt.Errorf("the build container: %w", err)
		}
	}
	if started != nil {
		started()
	}
	for {
		select {
		case <-ended:
			io.wait()
			return code, nil
		case sig := <-process.Signal:
			_ = unix.Kill(pid, sig)
		case <-ctx.Done():
			_ = unix.Kill(pid, unix.SIGKILL)
			<-ended
			io.wait()
			return code, nil
		}
	}
}

// removeState removes a container's libcontainer state: rootless on
// cgroup v1 it has no cgroup and no hooks, so that is all of it.
func removeState(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}

func dialUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	_ = unix.SetNonblock(fd, true)
	return os.NewFile(uintptr(fd), "runtime-server"), nil
}

// exitCode is the shell's figure: the code, or 128+N for death by signal N.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// stdio connects a build process's stdio to BuildKit's streams through
// pipes (the runtime server passes the files to the process as they are).
type stdio struct {
	stdin, stdout, stderr *os.File // the process's ends
	ours                  []*os.File
	copies                sync.WaitGroup
}

func newStdio(p executor.ProcessInfo) (*stdio, error) {
	s := &stdio{}
	var err error
	if p.Stdin == nil {
		if s.stdin, err = os.Open(os.DevNull); err != nil {
			return nil, err
		}
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		s.stdin, s.ours = r, append(s.ours, w)
		go func() {
			_, _ = io.Copy(w, p.Stdin)
			_ = w.Close()
		}()
	}
	if s.stdout, err = s.output(p.Stdout); err != nil {
		s.closeAll()
		return nil, err
	}
	if s.stderr, err = s.output(p.Stderr); err != nil {
		s.closeAll()
		return nil, err
	}
	return s, nil
}

// output returns the write end of a pipe copied to w (discarded when nil).
func (s *stdio) output(w io.Writer) (*os.File, error) {
	if w == nil {
		w = io.Discard
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.ours = append(s.ours, r)
	s.copies.Add(1)
	go func() {
		defer s.copies.Done()
		_, _ = io.Copy(w, r)
	}()
	return pw, nil
}

// closeChildEnds closes our copies of the process's ends, once the
// runtime server has them: the outputs then end when the process does.
func (s *stdio) closeChildEnds() {
	for _, f := range []*os.File{s.stdin, s.stdout, s.stderr} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// wait waits for the outputs to be copied.
func (s *stdio) wait() { s.copies.Wait() }

func (s *stdio) closeAll() {
	s.closeChildEnds()
	for _, f := range s.ours {
		_ = f.Close()
	}
}
