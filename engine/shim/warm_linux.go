package shim

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// A warm shim is started ahead of need: it has run the Go runtime's start
// and its packages' init, has started the hutch-runtime that will create
// the container, and waits on its control pipe for the bundle of the next
// container. Taking it instead of executing a new one saves the exec of a
// shim and of hutch-runtime on every start; the next one is started in the
// background. One is kept per pair of binaries, only while containers are
// started: it exits after warmIdle without use, when the engine closes
// (CloseWarm), or when the engine dies (its control pipe ends).
type warmShim struct {
	binary  string
	runtime string
	served  bool // started with wire.WarmServed: no spare runtime
	cmd     *exec.Cmd
	ctl     *os.File // the write end of its control pipe
	ready   *os.File // the read end of its ready pipe
}

// warmIdle is how long an unused warm shim waits before it exits.
const warmIdle = 30 * time.Second

var warm struct {
	mu       sync.Mutex
	shim     *warmShim
	starting bool
	closed   bool
	timer    *time.Timer
}

// takeWarm returns the warm shim for the binaries, if one is ready, and
// starts the next in the background.
func takeWarm(binary, runtime string, served bool) *warmShim {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	w := warm.shim
	warm.shim = nil
	if w != nil && (w.binary != binary || w.runtime != runtime || w.served != served) {
		w.stop()
		w = nil
	}
	if !warm.closed && !warm.starting {
		warm.starting = true
		go startWarm(binary, runtime, served)
	}
	return w
}

func startWarm(binary, runtime string, served bool) {
	w, err := spawnWarm(binary, runtime, served)
	warm.mu.Lock()
	defer warm.mu.Unlock()
	warm.starting = false
	if err != nil {
		return // the next start executes a shim of its own
	}
	if warm.closed || warm.shim != nil {
		w.stop()
		return
	}
	warm.shim = w
	if warm.timer == nil {
		warm.timer = time.AfterFunc(warmIdle, expireWarm)
	} else {
		warm.timer.Reset(warmIdle)
	}
}

func expireWarm() {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	if warm.shim != nil {
		warm.shim.stop()
		warm.shim = nil
	}
}

// CloseWarm stops the warm shim and starts no other.
func CloseWarm() {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	warm.closed = true
	if warm.shim != nil {
		warm.shim.stop()
		warm.shim = nil
	}
}

// spawnWarm starts "hutch-shim warm RUNTIME": the shim starts its first
// hutch-runtime at once, so that it too waits ready; served, it starts
// none (the engine's runtime server will answer it).
func spawnWarm(binary, runtime string, served bool) (*warmShim, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		readyW.Close()
		return nil, err
	}
	args := []string{"warm", runtime}
	if served {
		args = append(args, wire.WarmServed)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = "/"
	// fd 3 is the ready pipe, fd 4 the control pipe (server.controlFD).
	cmd.ExtraFiles = []*os.File{readyW, ctlR}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as spawn's
	cmd.Env = wire.OneP(os.Environ())
	err = cmd.Start()
	readyW.Close()
	ctlR.Close()
	if err != nil {
		readyR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("start warm shim: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &warmShim{binary: binary, runtime: runtime, served: served, cmd: cmd, ctl: ctlW, ready: readyR}, nil
}

// hand gives the warm shim its bundle; it then runs as `hutch-shim run
// bundle` would.
func (w *warmShim) hand(bundle string) error {
	_, err := fmt.Fprintf(w.ctl, "%s\n", bundle)
	w.ctl.Close()
	if err != nil {
		w.ready.Close()
		_ = w.cmd.Process.Kill()
	}
	return err
}

// stop ends an unused warm shim: a closed control pipe makes it exit.
func (w *warmShim) stop() {
	w.ctl.Close()
	w.ready.Close()
}
