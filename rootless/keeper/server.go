package keeper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Options configures Serve.
type Options struct {
	// StateDir is the daemon's state dir, where the socket is.
	StateDir string
	// Env is handed to every engine: the namespaces' own keys
	// (rootless.InsideEnv).
	Env []string
	// Keep reports whether something still needs the namespaces once no
	// engine holds a lease; Serve returns when it says no. Nil is
	// Occupied.
	Keep func() bool
	// Poll is how often Keep is asked while no engine runs (0: 250 ms).
	Poll   time.Duration
	Logger *slog.Logger
}

// firstLease is how long a new keeper waits for the daemon that started
// it before it takes that daemon for dead.
const firstLease = time.Minute

// Serve hands its namespaces to engines, one lease at a time, until no
// engine holds one and nothing is left to keep. It returns nil then, or
// when ctx ends.
func Serve(ctx context.Context, o Options) error {
	if o.Keep == nil {
		o.Keep = Occupied
	}
	if o.Poll == 0 {
		o.Poll = 250 * time.Millisecond
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
	served, start := false, time.Now()
	for ctx.Err() == nil {
		l.SetDeadline(time.Now().Add(o.Poll))
		c, err := l.AcceptUnix()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return err
			}
			// Until the first lease, the daemon that started this keeper
			// is on its way, unless it died before it came.
			if (served || time.Since(start) > firstLease) && !o.Keep() {
				o.Logger.Debug("keeper: no engine and no container left: exiting")
				return nil
			}
			continue
		}
		if lease(c, o) {
			served = true
		}
		if served && !o.Keep() {
			o.Logger.Debug("keeper: the engine ended and no container runs: exiting")
			return nil
		}
	}
	return nil
}

// lease hands the namespaces to one client and returns once its
// connection closed (the engine ended). It reports whether a lease was
// given.
func lease(c *net.UnixConn, o Options) bool {
	defer c.Close()
	br := bufio.NewReader(c)
	refuse := func(msg string) bool {
		sendFiles(c, nil)
		writeJSON(c, Reply{V: Version, Err: msg})
		return false
	}
	var req Request
	if err := json.NewDecoder(br).Decode(&req); err != nil {
		return refuse("reading the request: " + err.Error())
	}
	if req.V != Version {
		return refuse(fmt.Sprintf("the keeper speaks version %d, the daemon version %d: stop the running containers (the keeper then exits) or start the daemon of the keeper's build", Version, req.V))
	}
	if req.Op != "enter" {
		return refuse(fmt.Sprintf("unknown op %q", req.Op))
	}
	var files []*os.File
	for _, ns := range []string{"user", "mnt"} {
		f, err := os.Open("/proc/self/ns/" + ns)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return refuse(err.Error())
		}
		files = append(files, f)
	}
	err := sendFiles(c, files)
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		return false
	}
	if err := writeJSON(c, Reply{V: Version, PID: os.Getpid(), Env: o.Env}); err != nil {
		return false
	}
	o.Logger.Debug("keeper: lease given")
	// The engine holds the connection for its life and sends nothing.
	buf := make([]byte, 64)
	for {
		if _, err := br.Read(buf); err != nil {
			o.Logger.Debug("keeper: lease returned")
			return true
		}
	}
}

// Occupied reports whether a process other than this one and its
// siblings lives in this process's user namespace: each running
// container's shim does, for as long as its container runs, and so do the
// engine's helpers until they end (the runtime server with the last
// container it serves). The siblings are the keeper's own: slirp4netns,
// which joins the user namespace to serve the network.
func Occupied() bool {
	self, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return true // cannot tell: keep
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	me, parent := os.Getpid(), os.Getppid()
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == me {
			continue
		}
		if ns, err := os.Readlink(filepath.Join("/proc", ent.Name(), "ns", "user")); err == nil && ns == self && ppid(pid) != parent {
			return true
		}
	}
	return false
}

// ppid is pid's parent, 0 if unknown.
func ppid(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// After the command, in parentheses, which may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(string(f[1]))
	return n
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
