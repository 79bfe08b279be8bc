package keeper

import (
	"bufio"
	"context"
	"encoding/json"
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
)

// Options configures Serve.
type Options struct {
	// StateDir is the daemon's state dir, where the socket is.
	StateDir string
	// Env is added to every engine's environment, replacing the keys the
	// request's has: the namespaces' own (rootless.InsideEnv).
	Env []string
	// Keep reports whether something still needs the namespaces once no
	// engine runs; Serve returns when it says no. Nil is HasShims.
	Keep func() bool
	// Poll is how often Keep is asked while no engine runs (0: 1 s).
	Poll   time.Duration
	Logger *slog.Logger
}

// Serve runs engines on request, one at a time, until none runs and
// nothing is left to keep.
func Serve(ctx context.Context, o Options) error {
	if o.Keep == nil {
		o.Keep = HasShims
	}
	if o.Poll == 0 {
		o.Poll = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	path := filepath.Join(o.StateDir, SocketName)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return fmt.Errorf("keeper socket: %w", err)
	}
	l.SetUnlinkOnClose(true)
	defer l.Close()
	served := false
	for {
		if ctx.Err() != nil {
			return nil
		}
		l.SetDeadline(time.Now().Add(o.Poll))
		c, err := l.AcceptUnix()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// The first engine is on its way: the daemon that started
				// this keeper connects as soon as the socket is there.
				if served && !o.Keep() {
					o.Logger.Debug("keeper: no engine and no container: exiting")
					return nil
				}
				continue
			}
			return err
		}
		served = true
		serveOne(c, o)
		if !o.Keep() {
			o.Logger.Debug("keeper: the engine ended and no container runs: exiting")
			return nil
		}
	}
}

// serveOne runs the engine one client asks for and reports its exit.
func serveOne(c *net.UnixConn, o Options) {
	defer c.Close()
	reply := func(r Reply) { r.V = Version; writeJSON(c, r) }
	stdio, err := recvFiles(c, 3)
	if err != nil {
		reply(Reply{Err: "reading the stdio descriptors: " + err.Error()})
		return
	}
	defer func() {
		for _, f := range stdio {
			f.Close()
		}
	}()
	br := bufio.NewReader(c)
	var req Request
	if err := json.NewDecoder(br).Decode(&req); err != nil {
		reply(Reply{Err: "reading the request: " + err.Error()})
		return
	}
	if req.V != Version {
		reply(Reply{Err: fmt.Sprintf("the keeper speaks version %d, the request is version %d: stop the containers (the keeper then exits) or start the daemon whose build matches", Version, req.V)})
		return
	}
	if req.Op != "run" || req.Engine == "" || len(req.Args) == 0 {
		reply(Reply{Err: fmt.Sprintf("bad request: op %q, engine %q", req.Op, req.Engine)})
		return
	}
	cmd := &exec.Cmd{Path: req.Engine, Args: req.Args, Env: mergeEnv(req.Env, o.Env)}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	// The engine dies with the keeper: without it, the namespaces are gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		reply(Reply{Err: fmt.Sprintf("starting the engine: %v", err)})
		return
	}
	o.Logger.Debug("keeper: engine started", "pid", cmd.Process.Pid, "binary", req.Engine)
	reply(Reply{PID: cmd.Process.Pid})
	// A client that goes away (killed) takes its engine along.
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := br.Read(buf); err != nil {
				cmd.Process.Signal(syscall.SIGKILL)
				return
			}
		}
	}()
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		code = ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	default:
		code = 1
	}
	o.Logger.Debug("keeper: engine exited", "pid", cmd.Process.Pid, "status", code)
	reply(Reply{Exit: &code})
}

// mergeEnv is env with the keys of over replaced by over's values.
func mergeEnv(env, over []string) []string {
	keys := map[string]bool{}
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	out := make([]string, 0, len(env)+len(over))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, over...)
}

// ShimName is the process name (comm) of a container's shim.
const ShimName = "hutch-shim"

// HasShims reports whether a shim runs in this process's user namespace:
// each running container has one, and it lives as long as its container.
func HasShims() bool {
	self, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return true // cannot tell: keep
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, ent := range ents {
		name := ent.Name()
		if name == "" || name[0] < '1' || name[0] > '9' {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", name, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != ShimName {
			continue
		}
		if ns, err := os.Readlink(filepath.Join("/proc", name, "ns", "user")); err == nil && ns == self {
			return true
		}
	}
	return false
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
