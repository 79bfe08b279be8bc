package server

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// readyFD is the pipe on which the shim tells Create that the container
// exists (or why it does not).
const readyFD = 3

// controlFD is where a warm shim reads its bundle.
const controlFD = 4

// outputGrace bounds how long the shim waits, after the container's init
// exited, for processes that escaped its pid namespace to release stdio.
const outputGrace = 2 * time.Second

// Main runs the shim: args are ["run", bundleDir], or ["warm",
// runtimeBinary] for a shim started ahead of need (["warm", runtimeBinary,
// wire.WarmServed] when the engine's runtime server will answer it: no
// spare runtime then).
func Main(args []string) error {
	warm := (len(args) == 2 || len(args) == 3) && args[0] == "warm"
	if !warm && (len(args) != 2 || args[0] != "run") {
		return errors.New("usage: hutch-shim run BUNDLE, or warm RUNTIME (started by the hutch engine)")
	}
	// No collection while the container is being created (a burst of
	// short-lived garbage on the start path); then a tight GC, since a shim
	// idles for the container's whole life and its resident memory counts
	// (docs/design.md, Performance goals: ≤ 3 MiB per container).
	debug.SetGCPercent(-1)
	// The engine's pipes are for this process alone, not for hutch-runtime.
	unix.CloseOnExec(readyFD)
	s := &server{exited: make(chan struct{}), initDone: make(chan struct{}), execs: map[string]*execProc{}}
	if err := s.prepare(); err != nil {
		return err
	}
	bundle := args[1]
	if warm {
		unix.CloseOnExec(controlFD)
		// The runtime that will create the container starts now, while
		// the shim waits for its bundle.
		s.runtimeBin = args[1]
		if len(args) < 3 || args[2] != wire.WarmServed {
			s.spare, _ = s.startRuntime()
		}
		var err error
		if bundle, err = awaitBundle(); err != nil || bundle == "" {
			return nil // the engine went away or needs no more shims
		}
	}
	ready := os.NewFile(readyFD, "ready")
	if err := s.create(bundle); err != nil {
		s.log.error("create failed", "err", err.Error())
		reportReady(ready, wire.ErrorResponse(err))
		return err
	}
	reportReady(ready, &wire.Response{Pid: s.pid})
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
	// Through the poller: the wait holds no thread.
	_ = unix.SetNonblock(controlFD, true)
	ctl := os.NewFile(controlFD, "control")
	line, err := bufio.NewReader(ctl).ReadString('\n')
	ctl.Close()
	if err != nil {
		return "", err
	}
	bundle := strings.TrimSuffix(line, "\n")
	if !filepath.IsAbs(bundle) {
		return "", errors.New("warm shim: bundle " + strconv.Quote(bundle) + " is not absolute")
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

func reportReady(f *os.File, r *wire.Response) {
	_ = wire.WriteJSONLine(f, r)
	_ = f.Close()
}

// server is the running shim for one container.
type server struct {
	cfg    *wire.Config
	bundle string
	log    *logger

	reaper     *reaper
	runtimeBin string
	runtimes   sync.WaitGroup // hutch-runtime processes not reaped yet
	spareMu    sync.Mutex
	spare      *runtimeProc // started ahead of need by a warm shim
	init       *proc
	pid        int
	pidfd      int // signals reach the init, never a later owner of its pid
	fifo       string
	stateDir   string
	needsDel   bool
	logw       *jsonlog.Writer
	ln         *listener

	// initDone is closed once the init has been reaped; initStatus is then
	// its wait status.
	initDone   chan struct{}
	initStatus unix.WaitStatus

	mu        sync.Mutex
	status    wire.Status
	startedAt time.Time
	// execAt is when the init had exec'd the container's command.
	execAt time.Time
	exit   *wire.ExitStatus
	exited chan struct{} // closed once exit is set and the exit file written
	execs  map[string]*execProc
	// forgetArmed: a timer will drop the records of ended execs.
	forgetArmed bool
	settler     settler
	conns       sync.WaitGroup
}

// prepare makes the shim the reaper of its container's processes.
func (s *server) prepare() error {
	s.log = &logger{}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return wire.Wrap("become subreaper", err)
	}
	// No signal handlers (os/signal is two threads per shim): the shim
	// leads a session of its own without a terminal, so no terminal
	// signal reaches it, and its stdout and stderr are a file, so no
	// SIGPIPE.
	s.reaper = newReaper()
	return nil
}
