package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim"
)

// readyFD is the pipe on which the shim tells Create that the container
// exists (or why it does not).
const readyFD = 3

// outputGrace bounds how long the shim waits, after the container's init
// exited, for processes that escaped its pid namespace to release stdio.
const outputGrace = 2 * time.Second

// Main runs the shim: args are ["run", bundleDir], or ["delete",
// bundleDir] to clean up after a shim that died.
func Main(args []string) error {
	if len(args) == 2 && args[0] == "delete" {
		return deleteContainer(args[1])
	}
	if len(args) == 1 && args[0] == "warm" {
		bundle, err := awaitBundle()
		if err != nil || bundle == "" {
			return nil // the engine went away or needs no more shims
		}
		args = []string{"run", bundle}
	}
	if len(args) != 2 || args[0] != "run" {
		return errors.New("usage: hutch-shim run|delete BUNDLE, or warm (started by the hutch engine)")
	}
	// No collection while the container is being created (a burst of
	// short-lived garbage on the start path); then a tight GC, since a shim
	// idles for the container's whole life and its resident memory counts
	// (DESIGN §7: ≤ 3 MiB per container).
	debug.SetGCPercent(-1)

	bundle := args[1]
	ready := os.NewFile(readyFD, "ready")
	cfg, err := readConfig(bundle)
	if err != nil {
		reportReady(ready, shim.ErrorResponse(err))
		return err
	}
	level := slog.LevelInfo
	logrus.SetLevel(logrus.WarnLevel)
	if cfg.Debug {
		level = slog.LevelDebug
		logrus.SetLevel(logrus.DebugLevel)
		// Sub-millisecond stamps: the debug log is how a start is profiled.
		logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000000"})
	}
	logrus.SetOutput(os.Stderr)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("container", cfg.ID)

	s := &server{cfg: cfg, bundle: bundle, log: log, exited: make(chan struct{}), execs: map[string]*execProc{}}
	if err := s.create(); err != nil {
		log.Error("create failed", "err", err)
		reportReady(ready, shim.ErrorResponse(err))
		return err
	}
	reportReady(ready, &shim.Response{Pid: s.pid})
	debug.SetGCPercent(25)
	s.serve()
	return nil
}

// awaitBundle is a warm shim's wait (engine/shim's warm_linux.go): the
// engine writes the bundle of the container to run on the control pipe,
// or closes it. The shim then makes itself what the engine would have
// made of a new one: its directory the bundle, its output the bundle's
// shim.log.
func awaitBundle() (string, error) {
	ctl := os.NewFile(controlFD, "control")
	line, err := bufio.NewReader(ctl).ReadString('\n')
	ctl.Close()
	if err != nil {
		return "", err
	}
	bundle := strings.TrimSuffix(line, "\n")
	if !filepath.IsAbs(bundle) {
		return "", fmt.Errorf("warm shim: bundle %q is not absolute", bundle)
	}
	if err := os.Chdir(bundle); err != nil {
		return "", err
	}
	log, err := os.OpenFile(filepath.Join(bundle, "shim.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer log.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(log.Fd()), fd, 0); err != nil {
			return "", err
		}
	}
	return bundle, nil
}

// controlFD is where a warm shim reads its bundle.
const controlFD = 4

func reportReady(f *os.File, r *shim.Response) {
	_ = shim.WriteJSONLine(f, r)
	_ = f.Close()
}

func readConfig(bundle string) (*shim.Config, error) {
	b, err := os.ReadFile(filepath.Join(bundle, shim.ConfigFile))
	if err != nil {
		return nil, err
	}
	var cfg shim.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", shim.ConfigFile, err, errdefs.ErrInvalidArgument)
	}
	return &cfg, nil
}

// server is the running shim for one container.
type server struct {
	cfg    *shim.Config
	bundle string
	log    *slog.Logger

	reaper    *reaper
	container *libcontainer.Container
	init      *proc
	pid       int
	initExit  <-chan unix.WaitStatus
	pidfd     int // signals reach the init, never a later owner of its pid
	logw      *shim.LogWriter
	ln        net.Listener
	oomKilled bool

	mu        sync.Mutex
	status    shim.Status
	startedAt time.Time
	exit      *shim.ExitStatus
	exited    chan struct{} // closed once exit is set and the exit file written
	execs     map[string]*execProc
	conns     sync.WaitGroup
}

// create makes the container with its init waiting (on libcontainer's exec
// fifo) for Start, and opens the socket.
func (s *server) create() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become subreaper: %w", err)
	}
	// Handled (not ignored) so that stray terminal signals do not kill the
	// shim while the container's processes still get default dispositions
	// on exec.
	signal.Notify(make(chan os.Signal, 1), unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGPIPE)
	s.reaper = newReaper()

	host := shim.DetectHost()
	spec, err := loadSpec(s.bundle, host, s.log)
	if err != nil {
		return err
	}
	s.log.Debug("spec loaded")
	c, err := createContainer(s.cfg, spec, host)
	if err != nil {
		return err
	}
	s.log.Debug("container created")
	s.container = c
	p, err := newProcess(spec.Process, true)
	if err != nil {
		_ = c.Destroy()
		return err
	}
	if s.cfg.Tty {
		p.ConsoleHeight, p.ConsoleWidth = s.cfg.Height, s.cfg.Width
	}
	pr, err := newProc(p, s.cfg.Tty, s.cfg.OpenStdin)
	if err != nil {
		_ = c.Destroy()
		return err
	}
	if s.logw, err = shim.OpenLogWriter(s.cfg.LogPath, s.cfg.LogRotation); err != nil {
		pr.closeAll()
		_ = c.Destroy()
		return err
	}
	s.pid, s.initExit, err = s.reaper.spawn(func() (int, error) {
		if err := c.Start(p); err != nil {
			return 0, err
		}
		return p.Pid()
	})
	if err != nil {
		pr.closeAll()
		_ = s.logw.Close()
		_ = c.Destroy()
		return shim.NewStartError(err.Error())
	}
	s.log.Debug("init started", "pid", s.pid)
	if err := pr.started(); err != nil {
		return s.abort(err)
	}
	for i := range pr.outputs {
		name := "stdout"
		if pr.outputs[i].stream == shim.StreamStderr {
			name = "stderr"
		}
		pr.outputs[i].log = s.logw.Stream(name)
	}
	if s.pidfd, err = unix.PidfdOpen(s.pid, 0); err != nil {
		return s.abort(fmt.Errorf("pidfd of the container's init: %w", err))
	}
	s.init = pr
	s.status = shim.StatusCreated
	// OOM events need a memory cgroup of the container's own: none exists
	// with rootless cgroups unless limits can be enforced.
	if !host.InUserNS || host.CgroupLimits {
		s.watchOOM()
	}
	pr.pump()

	_ = os.Remove(s.cfg.SocketPath)
	ln, err := net.Listen("unix", s.cfg.SocketPath)
	if err != nil {
		return s.abort(err)
	}
	_ = os.Chmod(s.cfg.SocketPath, 0o600)
	s.ln = ln
	return nil
}

// abort undoes a create that failed after the init was started.
func (s *server) abort(err error) error {
	_ = s.container.Signal(unix.SIGKILL)
	select {
	case <-s.initExit:
	case <-time.After(5 * time.Second):
	}
	_ = s.container.Destroy()
	return err
}

func (s *server) watchOOM() {
	ch, err := s.container.NotifyOOM()
	if err != nil {
		s.log.Debug("no OOM notification", "err", err)
		return
	}
	go func() {
		for range ch {
			s.mu.Lock()
			s.oomKilled = true
			s.mu.Unlock()
		}
	}()
}

// start lets the init exec the container's command.
func (s *server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != shim.StatusCreated {
		return fmt.Errorf("container %s is %s: %w", s.cfg.ID, s.status, errdefs.ErrConflict)
	}
	// Stamped before the exec: a quick command can exit (and be reaped)
	// before Exec returns, and its end must not come before its start.
	started := time.Now().UTC()
	if err := s.container.Exec(); err != nil {
		return shim.NewStartError(err.Error())
	}
	s.status = shim.StatusRunning
	s.startedAt = started
	s.log.Debug("started")
	return nil
}

// serve answers clients until the container has exited and every waiter
// has its answer.
func (s *server) serve() {
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		s.accept()
	}()
	ws := <-s.initExit
	s.finish(ws)
	// Waiters and attachers have their answers. New clients find no
	// socket and read the exit file; connections in flight get a moment.
	_ = os.Remove(s.cfg.SocketPath)
	_ = s.ln.Close()
	<-accepting
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// finish records the exit: all output is in the log before the exit file
// exists, so a client that sees the exit can read complete logs.
func (s *server) finish(ws unix.WaitStatus) {
	finished := time.Now().UTC()
	s.log.Debug("init exited")
	s.init.finish(outputGrace)
	s.finishExecs()
	_ = s.logw.Close()
	s.log.Debug("output ended")
	if err := s.container.Destroy(); err != nil {
		s.log.Warn("destroy", "err", err)
	}
	s.log.Debug("destroyed")
	s.mu.Lock()
	st := &shim.ExitStatus{ExitCode: exitCode(ws), OOMKilled: s.oomKilled, StartedAt: s.startedAt, FinishedAt: finished}
	s.mu.Unlock()
	if err := shim.WriteExit(s.cfg.ExitFile, *st); err != nil {
		s.log.Error("exit status not recorded", "err", err)
		st.Error = err.Error()
	}
	s.log.Info("exited", "code", st.ExitCode)
	s.mu.Lock()
	s.status = shim.StatusStopped
	s.exit = st
	s.mu.Unlock()
	close(s.exited)
}

func (s *server) state() shim.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return shim.State{
		ID: s.cfg.ID, Pid: s.pid, ShimPid: os.Getpid(), Status: s.status, StartedAt: s.startedAt, Exit: s.exit,
		ExitFile: s.cfg.ExitFile, Tty: s.cfg.Tty, OpenStdin: s.cfg.OpenStdin,
	}
}

// freeze pauses or resumes every process of the container through its
// cgroup freezer.
func (s *server) freeze(pause bool) error {
	select {
	case <-s.exited:
		return fmt.Errorf("container %s is not running: %w", s.cfg.ID, errdefs.ErrConflict)
	default:
	}
	var err error
	if pause {
		err = s.container.Pause()
	} else {
		err = s.container.Resume()
	}
	if err != nil {
		return fmt.Errorf("cgroup freezer: %v: %w", err, errdefs.ErrFailedPrecondition)
	}
	return nil
}

func (s *server) kill(sig int) error {
	if sig <= 0 || sig > 64 {
		return fmt.Errorf("invalid signal %d: %w", sig, errdefs.ErrInvalidArgument)
	}
	select {
	case <-s.exited:
		return fmt.Errorf("container %s is not running: %w", s.cfg.ID, errdefs.ErrConflict)
	default:
	}
	if err := unix.PidfdSendSignal(s.pidfd, unix.Signal(sig), nil, 0); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal %d to the container: %w", sig, err)
	}
	return nil
}
