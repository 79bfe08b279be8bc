// Package sidecar starts and ends the engine's helper processes
// (hutch-buildkit, hutch-swarm) the one way both need: the helper gets a
// hold pipe at fd 3, whose EOF (the engine closed it, or died) tells it
// to stop, so that a helper never outlives the engine that knows it, and a
// ready pipe at fd 4, which it closes once its socket takes connections.
// Start is the engine's side, Flags the helper's.
package sidecar

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Options describe a helper to start.
type Options struct {
	// Name is the binary's name, for messages ("hutch-swarm").
	Name   string
	Binary string
	// Args come before the pipes' flags (--hold-fd 3 --ready-fd 4).
	Args []string
	// Socket is where the helper listens once it is ready.
	Socket string
	// LogFile takes its stdout and stderr, appended.
	LogFile string
	// Timeout bounds its start.
	Timeout time.Duration
}

// Process is a started helper.
type Process struct {
	Cmd *exec.Cmd
	// Exited is closed once the process has exited.
	Exited <-chan struct{}
	// Err is its exit, once Exited is closed.
	Err error
}

// Start starts the helper and waits until it listens on o.Socket; a
// helper that dies or times out first is an error naming its log. The
// helper runs in a process group of its own (a signal to the engine's is
// not for it).
func Start(ctx context.Context, o Options) (*Process, error) {
	logf, err := os.OpenFile(o.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	holdR, holdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer holdR.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		holdW.Close()
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(o.Binary, append(o.Args, "--hold-fd", "3", "--ready-fd", "4")...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{holdR, readyW}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		holdW.Close()
		return nil, fmt.Errorf("start %s: %w", o.Name, err)
	}
	exited := make(chan struct{})
	p := &Process{Cmd: cmd, Exited: exited}
	go func() {
		p.Err = cmd.Wait()
		holdW.Close()
		close(exited)
	}()
	// EOF once it listens, or once it has died.
	ready := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, readyR)
		close(ready)
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		return nil, ctx.Err()
	case <-time.After(o.Timeout):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s did not listen within %s (see %s)", o.Name, o.Timeout, o.LogFile)
	}
	// A process that died at start closed the pipe too.
	c, err := net.Dial("unix", o.Socket)
	if err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return nil, fmt.Errorf("%s exited at start (see %s)", o.Name, o.LogFile)
	}
	c.Close()
	return p, nil
}

// Stop sends SIGTERM, and SIGKILL after grace, and waits for the exit.
func (p *Process) Stop(grace time.Duration) {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	}
}

// ChildFlags are the pipes' flags of a helper's command line.
type ChildFlags struct {
	ready, hold *int
}

// Flags registers --ready-fd and --hold-fd on fs.
func Flags(fs *flag.FlagSet) *ChildFlags {
	return &ChildFlags{
		ready: fs.Int("ready-fd", -1, "a pipe to close once the socket takes connections"),
		hold:  fs.Int("hold-fd", -1, "a pipe from the engine: stop when it reads EOF"),
	}
}

// Ready is what the helper calls once it listens (nil without a ready
// pipe).
func (f *ChildFlags) Ready() func() {
	if *f.ready < 0 {
		return nil
	}
	r := os.NewFile(uintptr(*f.ready), "ready")
	return func() { r.Close() }
}

// Hold returns a context that ends when the hold pipe reads EOF: the
// engine has closed it or died (ctx itself without a hold pipe).
func (f *ChildFlags) Hold(ctx context.Context) context.Context {
	if *f.hold < 0 {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	h := os.NewFile(uintptr(*f.hold), "engine-hold")
	go func() {
		_, _ = io.Copy(io.Discard, h)
		cancel()
	}()
	return ctx
}

// Slot is where the engine keeps its one process of a helper: Keep makes
// a started process the current one, and its exit clears it.
type Slot struct {
	mu   sync.Mutex
	proc *Process
}

// Keep makes p the current process; onExit, when set, runs once p has
// exited, with its exit.
func (s *Slot) Keep(p *Process, onExit func(error)) {
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	go func() {
		<-p.Exited
		s.mu.Lock()
		if s.proc == p {
			s.proc = nil
		}
		s.mu.Unlock()
		if onExit != nil {
			onExit(p.Err)
		}
	}()
}

// Current is the running process, or nil. A process that has exited is
// no longer current even before Keep's watcher has cleared it: who saw
// the exit (WaitExit) must not find it running.
func (s *Slot) Current() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		select {
		case <-s.proc.Exited:
			s.proc = nil
		default:
		}
	}
	return s.proc
}

// Running reports whether a process runs.
func (s *Slot) Running() bool { return s.Current() != nil }

// WaitExit waits for the running process to exit: true once none runs,
// false if it still runs after limit or when ctx ends.
func (s *Slot) WaitExit(ctx context.Context, limit time.Duration) bool {
	p := s.Current()
	if p == nil {
		return true
	}
	select {
	case <-p.Exited:
		return true
	case <-ctx.Done():
	case <-time.After(limit):
	}
	return false
}

// Stop stops the running process, if any (Process.Stop).
func (s *Slot) Stop(grace time.Duration) {
	if p := s.Current(); p != nil {
		p.Stop(grace)
	}
}
