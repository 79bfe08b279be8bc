package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/rootless"
	"github.com/hutch-engine/hutch/rootless/keeper"
	"github.com/hutch-engine/hutch/rootless/nsenter"
	"golang.org/x/sys/unix"
)

// keeperStart bounds how long a new keeper may take to set the namespaces
// up (newuidmap, slirp4netns) and listen.
const keeperStart = 30 * time.Second

// runKept is `hutch daemon` on the host with live restore: the namespaces
// belong to a keeper that outlives the engine (package rootless/keeper).
// It finds the keeper a previous daemon left, or starts one, takes a
// lease on its namespaces and re-executes this binary into them
// (rootless/nsenter), keeping its pid, stdio and the instance lock: the
// daemon's host process becomes the engine, and nothing waits beside it.
// It returns only on failure.
func runKept(inst *instance, c *config.Config, idmap rootless.IDMap, log *slog.Logger) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var l *keeper.Lease
	for attempt := 0; ; attempt++ {
		conn, err := keeper.Dial(c.StateDir)
		if err == nil {
			log.Info("live restore: the namespaces of an earlier engine are kept; entering them")
		} else if conn, err = startKeeper(c, idmap); err != nil {
			return err
		}
		l, err = keeper.Enter(conn)
		if err == nil {
			break
		}
		// A keeper whose last container just ended closes as we come:
		// a new one takes its place once it is gone (keeper.lock).
		if !errors.Is(err, keeper.ErrKeeperGone) || attempt >= 3 {
			return fmt.Errorf("live restore: %w", err)
		}
	}
	defer l.Close()
	// The namespaces are what the keeper made them: settings that shape
	// them take effect once no container runs and the keeper is gone.
	keptMap, keptNet := rootless.KeptShape(l.Env)
	if keptMap != idmap || keptNet != c.Network {
		log.Warn("WARNING: live restore: the running containers' namespaces were made with other settings, which stay until no container runs",
			"idmap", keptMap, "network", keptNet, "asked-idmap", idmap, "asked-network", c.Network)
		c.Network = keptNet
		os.Setenv(config.EnvConfig, c.Encode())
	}
	lease, err := l.Conn.File()
	if err != nil {
		return err
	}
	defer lease.Close()
	fds := []uintptr{inst.lock.Fd(), lease.Fd(), l.UserNS.Fd(), l.MountNS.Fd()}
	for _, fd := range fds {
		if _, err := unix.FcntlInt(fd, unix.F_SETFD, 0); err != nil {
			return fmt.Errorf("live restore: %w", err)
		}
	}
	env := mergeEnv(os.Environ(), append(l.Env,
		fmt.Sprintf("%s=%d,%d", nsenter.EnvNSEnter, fds[2], fds[3]),
		fmt.Sprintf("%s=%d,%d", envKept, fds[0], fds[1]),
	))
	err = syscall.Exec(self, os.Args, env)
	for _, fd := range fds {
		unix.FcntlInt(fd, unix.F_SETFD, unix.FD_CLOEXEC)
	}
	return fmt.Errorf("live restore: exec %s: %w", self, err)
}

// keeperRuns reports whether a keeper answers: a daemon with live restore
// left containers running. One without live restore enters its
// namespaces all the same, adopting them with their network, and stops
// them when it stops (the keeper then exits), as dockerd started without
// live-restore stops what an earlier one left running.
func keeperRuns(c *config.Config) bool {
	conn, err := keeper.Dial(c.StateDir)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// envKept carries, into the engine that runKept became, the descriptors
// of the instance lock and of the keeper's lease ("lock,lease").
const envKept = "_HUTCH_KEPT"

// kept is, in an engine that runKept re-executed into a keeper's
// namespaces, the clean-up of what it inherited: the lock and the lease
// stay open for its life but reach none of its children (shims outlive
// it), and the pid file goes at its exit, as hutch-ns removes it without
// live restore. In any other engine it does nothing.
func kept(c *config.Config) (cleanup func(), err error) {
	v, ok := os.LookupEnv(envKept)
	os.Unsetenv(envKept)
	entered := nsenter.Entered()
	if !ok {
		return func() {}, nil
	}
	if !entered {
		return nil, fmt.Errorf("%s without %s: not started by hutch daemon", envKept, nsenter.EnvNSEnter)
	}
	var lock, lease int
	if _, err := fmt.Sscanf(v, "%d,%d", &lock, &lease); err != nil {
		return nil, fmt.Errorf("%s=%q: %w", envKept, v, err)
	}
	for _, fd := range []int{lock, lease} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return nil, fmt.Errorf("%s: descriptor %d: %w", envKept, fd, err)
		}
	}
	watchLease(lease)
	pidFile := filepath.Join(c.StateDir, "hutch.pid")
	return func() { os.Remove(pidFile) }, nil
}

// watchLease warns when the keeper's end of the lease closes: the keeper
// died (killed), and slirp4netns and the port driver with it, so the
// containers have lost their way out and their published ports. The next
// daemon start makes new namespaces and stops them.
func watchLease(fd int) {
	f := os.NewFile(uintptr(fd), "keeper-lease")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		slog.Warn("live restore: watching the keeper", "err", err)
		return
	}
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := conn.Read(buf); err != nil {
				slog.Error("live restore: the keeper of the namespaces is gone: containers have no outbound network or published ports until they are restarted; restart the daemon", "err", err)
				return
			}
		}
	}()
}

// mergeEnv is env with the keys of over replaced by over's values (a
// process that reads its environment takes a key's first value).
func mergeEnv(env, over []string) []string {
	keys := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	out := make([]string, 0, len(env)+len(over))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

// startKeeper starts hutch-ns as a keeper, in a session of its own and
// with its output in the state dir's keeper.log (it outlives this
// process, so it holds none of its stdio), and connects to it once it
// listens.
func startKeeper(c *config.Config, idmap rootless.IDMap) (*net.UnixConn, error) {
	bin, err := helperBinary("hutch-ns", "HUTCH_NS")
	if err != nil {
		return nil, err
	}
	h := rootless.Handover{
		Parent: rootless.ParentOptions{
			StateDir: filepath.Join(c.StateDir, "rootlesskit"),
			IDMap:    idmap,
			Network:  c.Network,
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
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return nil, fmt.Errorf("the namespaces' keeper did not listen within %s (its log: %s)", keeperStart, logPath)
		}
	}
}
