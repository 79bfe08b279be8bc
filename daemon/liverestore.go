package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/internal/logging"
	"github.com/hutch-engine/hutch/rootless"
	"github.com/hutch-engine/hutch/rootless/keeper"
)

// keeperStart bounds how long a new keeper may take to set the namespaces
// up (newuidmap, slirp4netns) and listen.
const keeperStart = 30 * time.Second

// runKept is `hutch daemon` on the host with live restore: the namespaces
// belong to a keeper that outlives the engine (package rootless/keeper).
// It finds the keeper a previous daemon left, or starts one, asks it to
// run this binary as the engine with this process's stdio, forwards the
// stop signals to the engine and exits with its status. This process
// keeps the instance lock meanwhile; its death (kill -9) makes the keeper
// kill the engine, and the containers keep running.
func runKept(c *config.Config, idmap rootless.IDMap, log *slog.Logger) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	req := keeper.Request{Engine: self, Args: os.Args, Env: os.Environ()}
	stdio := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	var eng *keeper.Engine
	for attempt := 0; ; attempt++ {
		conn, err := keeper.Dial(c.StateDir)
		if err == nil {
			log.Info("live restore: the namespaces of an earlier engine are kept; starting the engine in them")
		} else if conn, err = startKeeper(c, idmap, self); err != nil {
			return err
		}
		eng, err = keeper.Start(conn, req, stdio)
		if err == nil {
			break
		}
		// A keeper whose last container just ended closes as we come:
		// a new one takes its place once it is gone (keeper.lock).
		if !errors.Is(err, keeper.ErrKeeperGone) || attempt >= 3 {
			return fmt.Errorf("live restore: %w", err)
		}
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
	defer signal.Stop(sigc)
	go func() {
		for s := range sigc {
			syscall.Kill(eng.PID, s.(syscall.Signal))
		}
	}()
	code, err := eng.Wait()
	switch {
	case err != nil:
		return err
	case code != 0:
		return engineStatus(code)
	}
	return nil
}

// engineStatus is the engine's non-zero exit status, which `hutch daemon`
// exits with.
type engineStatus int

func (e engineStatus) Error() string { return fmt.Sprintf("engine exited with status %d", int(e)) }
func (e engineStatus) ExitCode() int { return int(e) }

// startKeeper starts hutch-ns as a keeper, in a session of its own and
// with its output in the state dir's keeper.log (it outlives this
// process, so it holds none of its stdio), and connects to it once it
// listens.
func startKeeper(c *config.Config, idmap rootless.IDMap, self string) (*net.UnixConn, error) {
	bin, err := helperBinary("hutch-ns", "HUTCH_NS")
	if err != nil {
		return nil, err
	}
	h := rootless.Handover{
		Parent: rootless.ParentOptions{
			StateDir: filepath.Join(c.StateDir, "rootlesskit"),
			IDMap:    idmap,
			Network:  c.Network,
			Engine:   self,
		},
		LockFD:   -1,
		LogLevel: c.LogLevel,
		Keeper:   c.StateDir,
	}
	kv, err := h.Env()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.StateDir, "keeper.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keeper log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, rootless.KeeperName)
	cmd.Env = append(os.Environ(), kv)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the keeper %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(keeperStart)
	for {
		conn, err := keeper.Dial(c.StateDir)
		if err == nil {
			return conn, nil
		}
		select {
		case werr := <-exited:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the namespaces' keeper exited (%v): %s", werr, strings.TrimSpace(string(b)))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return nil, fmt.Errorf("the namespaces' keeper did not listen within %s (its log: %s)", keeperStart, logPath)
		}
	}
}

// Keep is the namespace child of a live-restore daemon after its set-up
// (rootless/child): it keeps the namespaces and starts the engines that
// `hutch daemon` asks for, until none runs and no container is left.
func Keep(stateDir string) int {
	level := "info"
	if c, ok, _ := config.Inherited(); ok {
		level = c.LogLevel
	}
	log := logging.New(level)
	err := keeper.Serve(context.Background(), keeper.Options{StateDir: stateDir, Env: rootless.InsideEnv(), Logger: log})
	if err != nil {
		log.Error("keeper", "err", err)
		return 1
	}
	return 0
}
