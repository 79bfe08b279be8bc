package server

import (
	"os"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// create has hutch-runtime make the container, its init waiting (on
// libcontainer's exec fifo) for Start, and opens the socket.
func (s *server) create(bundle string) error {
	cfg, err := wire.ReadConfig(bundle)
	if err != nil {
		return err
	}
	s.cfg, s.bundle = cfg, bundle
	s.log = &logger{debugOn: cfg.Debug, id: cfg.ID}
	if s.spare != nil && s.runtimeBin != cfg.RuntimeBinary {
		s.spare.close()
		s.spare = nil
	}
	s.runtimeBin = cfg.RuntimeBinary
	s.log.debug("creating", "warm runtime", strconv.FormatBool(s.spare != nil))

	pr, roles, files, err := newProc(cfg.Tty, cfg.OpenStdin)
	if err != nil {
		return err
	}
	var logw *jsonlog.Writer
	if cfg.LogPath != "" { // "" is --log-driver none
		if logw, err = jsonlog.OpenWriter(cfg.LogPath, cfg.LogRotation); err != nil {
			pr.closeAll()
			return err
		}
		logw.CompressWith(s.gzipLog)
		logw.SetAttrs(cfg.LogAttrs)
	}
	reply, initExit, err := s.runtime(&wire.RuntimeRequest{Op: wire.RuntimeCreate, Bundle: bundle, Files: roles}, files)
	if err != nil {
		pr.closeAll()
		if logw != nil {
			_ = logw.Close()
		}
		return err
	}
	s.pid, s.fifo, s.stateDir, s.needsDel = reply.Pid, reply.Fifo, reply.StateDir, reply.NeedsDelete
	s.logw = logw
	go func() {
		s.initStatus = <-initExit
		close(s.initDone)
	}()
	s.log.debug("init started", "pid", itoa(s.pid))
	if err := pr.started(); err != nil {
		return s.abort(err)
	}
	for i := range pr.outputs {
		if logw == nil {
			break
		}
		name := "stdout"
		if pr.outputs[i].stream == wire.StreamStderr {
			name = "stderr"
		}
		pr.outputs[i].log = logw.Stream(name)
	}
	if s.pidfd, err = unix.PidfdOpen(s.pid, 0); err != nil {
		return s.abort(wire.Wrap("pidfd of the container's init", err))
	}
	s.init = pr
	s.status = wire.StatusCreated
	pr.pump()

	ln, err := listen(s.cfg.SocketPath)
	if err != nil {
		return s.abort(err)
	}
	s.ln = ln
	return nil
}

// abort undoes a create that failed after the init was started.
func (s *server) abort(err error) error {
	select {
	case <-s.initDone:
	default:
		// Not reaped yet, so the pid is still the init's.
		_ = unix.Kill(s.pid, unix.SIGKILL)
		select {
		case <-s.initDone:
		case <-time.After(5 * time.Second):
		}
	}
	s.removeContainer()
	return err
}

// removeContainer deletes the stopped container and reports whether the
// OOM killer struck it (known only where it had a memory cgroup).
func (s *server) removeContainer() (oomKilled bool) {
	if !s.needsDel {
		// No cgroup, no hooks: libcontainer's delete would only remove
		// the state directory, so the exec of hutch-runtime is saved.
		if err := os.RemoveAll(s.stateDir); err != nil {
			s.log.warn("remove state", "err", err.Error())
		}
		return false
	}
	reply, _, err := s.runtime(&wire.RuntimeRequest{Op: wire.RuntimeDelete, Bundle: s.bundle}, nil)
	if err != nil {
		s.log.warn("delete", "err", err.Error())
		return false
	}
	return reply.OOMKilled
}

// start lets the init exec the container's command.
func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != wire.StatusCreated {
		return wire.Wrap("container "+s.cfg.ID+" is "+string(s.status), errdefs.ErrConflict)
	}
	// Stamped before the release: a quick command can exit (and be
	// reaped) at once, and its end must not come before its start.
	started := time.Now().UTC()
	initExe, exeErr := exeOf(s.pid)
	if err := s.releaseInit(); err != nil {
		return wire.NewStartError(err.Error())
	}
	if exeErr == nil {
		s.awaitExec(initExe)
	} else {
		s.log.warn("the container's init cannot be watched for its exec", "err", exeErr.Error())
	}
	s.status = wire.StatusRunning
	s.startedAt = started
	s.execAt = time.Now()
	s.log.debug("started")
	return nil
}

// releaseInit lets the init exec the command (wire.ReleaseInit).
func (s *server) releaseInit() error {
	return wire.ReleaseInit(s.fifo, s.initDone)
}

// serve answers clients until the container has exited and every waiter
// has its answer.
func (s *server) serve() {
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		s.accept()
	}()
	<-s.initDone
	s.finish(s.initStatus)
	// Waiters and attachers have their answers. New clients find no
	// socket and read the exit file; connections in flight get a moment.
	_ = os.Remove(s.cfg.SocketPath)
	_ = s.ln.Close()
	<-accepting
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		s.runtimes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// finish records the exit: all output is in the log before the exit file
// exists, so a client that sees the exit can read complete logs.
func (s *server) finish(ws unix.WaitStatus) {
	finished := time.Now().UTC()
	s.log.debug("init exited")
	s.init.finish(outputGrace)
	s.finishExecs()
	if s.logw != nil {
		_ = s.logw.Close()
	}
	s.log.debug("output ended")
	oom := s.removeContainer()
	s.log.debug("destroyed")
	s.mu.Lock()
	st := &wire.ExitStatus{ExitCode: exitCode(ws), OOMKilled: oom, StartedAt: s.startedAt, FinishedAt: finished}
	s.mu.Unlock()
	if err := wire.WriteExit(s.cfg.ExitFile, *st); err != nil {
		s.log.error("exit status not recorded", "err", err.Error())
		st.Error = err.Error()
	}
	s.log.info("exited", "code", itoa(st.ExitCode))
	s.mu.Lock()
	s.status = wire.StatusStopped
	s.exit = st
	s.mu.Unlock()
	close(s.exited)
}

func (s *server) state() wire.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.State{
		ID: s.cfg.ID, Pid: s.pid, ShimPid: os.Getpid(), Status: s.status, StartedAt: s.startedAt, Exit: s.exit,
		ExitFile: s.cfg.ExitFile, Tty: s.cfg.Tty, OpenStdin: s.cfg.OpenStdin,
	}
}

// freeze pauses or resumes every process of the container through its
// cgroup freezer (hutch-runtime's pause and resume).
func (s *server) freeze(pause bool) error {
	select {
	case <-s.exited:
		return wire.Wrap("container "+s.cfg.ID+" is not running", errdefs.ErrConflict)
	default:
	}
	op := wire.RuntimeResume
	if pause {
		op = wire.RuntimePause
	}
	_, _, err := s.runtime(&wire.RuntimeRequest{Op: op, Bundle: s.bundle}, nil)
	return err
}

func (s *server) kill(sig int) error {
	if sig <= 0 || sig > 64 {
		return wire.Wrap("invalid signal "+itoa(sig), errdefs.ErrInvalidArgument)
	}
	select {
	case <-s.exited:
		return wire.Wrap("container "+s.cfg.ID+" is not running", errdefs.ErrConflict)
	default:
	}
	s.awaitHandler(unix.Signal(sig))
	if err := unix.PidfdSendSignal(s.pidfd, unix.Signal(sig), nil, 0); err != nil && err != unix.ESRCH {
		return wire.Wrap("signal "+itoa(sig)+" to the container", err)
	}
	return nil
}
