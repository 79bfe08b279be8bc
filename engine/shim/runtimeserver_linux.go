package shim

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// RuntimeServer keeps one "hutch-runtime serve" for the engine's shims to
// ask, started at the first need and again after it has exited (it exits
// after oci.ServeIdle with nothing to do). The containers' inits and exec
// processes are its children: it outlives the engine while any runs.
type RuntimeServer struct {
	bin, sock, logPath string
	debug              bool
	log                *slog.Logger

	mu     sync.Mutex
	closed bool
	// hold is the engine's end of the server's wire.EngineFD while the
	// server runs, nil when none does.
	hold *os.File
}

// readyTimeout bounds the wait for a starting server to listen.
const readyTimeout = 10 * time.Second

// NewRuntimeServer returns the server of runtime binary bin on socket
// sock, logging to logPath (at debug level with debug); nothing starts
// yet.
func NewRuntimeServer(bin, sock, logPath string, debug bool, log *slog.Logger) *RuntimeServer {
	return &RuntimeServer{bin: bin, sock: sock, logPath: logPath, debug: debug, log: log}
}

// Socket returns the socket of the running server, starting one if none
// runs, or "" when none could start: the shim then starts a hutch-runtime
// of its own, as it also does when the server does not answer.
func (r *RuntimeServer) Socket() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ""
	}
	if r.hold == nil {
		if err := r.start(); err != nil {
			r.log.Warn("runtime server did not start; shims start hutch-runtime themselves", "err", err)
			return ""
		}
	}
	return r.sock
}

// start runs the server and returns once it listens.
func (r *RuntimeServer) start() error {
	logf, err := os.OpenFile(r.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	args := []string{"serve", r.sock}
	if r.debug {
		args = append(args, "debug")
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	holdR, holdW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return err
	}
	defer holdR.Close()
	cmd.ExtraFiles = []*os.File{readyW, holdR} // wire.ReadyFD, wire.EngineFD
	// Its own process group (not session: see spawn): a signal to the
	// engine's group is not for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// One P in the environment, for the inits it starts (wire.OneP); the
	// server sets its own.
	cmd.Env = wire.OneP(os.Environ())
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		holdW.Close()
		return err
	}
	// EOF once it listens, or once it has died.
	_ = readyR.SetReadDeadline(time.Now().Add(readyTimeout))
	_, rerr := io.Copy(io.Discard, readyR)
	if _, err := os.Stat(r.sock); err != nil || rerr != nil {
		holdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return errors.New("hutch-runtime serve did not listen (see " + r.logPath + ")")
	}
	r.hold = holdW
	go func() {
		_ = cmd.Wait()
		r.mu.Lock()
		if r.hold == holdW {
			r.hold = nil
		}
		r.mu.Unlock()
		holdW.Close()
	}()
	return nil
}

// Close has the server take no more requests and exit once no process of
// its own is left to wait for (so does the engine's death), and starts no
// other.
func (r *RuntimeServer) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.hold != nil {
		_ = r.hold.Close()
		r.hold = nil
	}
}
