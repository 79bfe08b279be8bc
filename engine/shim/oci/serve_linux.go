package oci

import (
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/pidfd"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// ServeIdle is how long the runtime server lives without a request or a
// process of its own to wait for.
const ServeIdle = 30 * time.Second

// requestTimeout bounds the wait for a request on a new connection.
const requestTimeout = 10 * time.Second

// Serve answers the shims' requests on the unix socket at path, one
// request per connection, in parallel. It closes wire.ReadyFD once it
// listens, and stops listening when wire.EngineFD ends (the engine closed
// it, or died). The processes it creates (inits and exec processes) are its
// children: it reaps each and writes its wait status on the connection of
// the request that made it, as a line "status N". It returns once it has
// stopped listening (the engine gone, or ServeIdle without a request) and
// no process of its own is left.
//
// Its stderr is the engine's runtime.log: libcontainer's logger is the
// process's, so its messages and the server's, each naming its container,
// go there rather than to the bundles' shim.log; with verbose, at debug
// level.
func Serve(path string, verbose bool) error {
	// A long-lived process: it collects its garbage, and uses every CPU.
	// The inits it starts get GOMAXPROCS from its environment (one P).
	debug.SetGCPercent(100)
	runtime.GOMAXPROCS(runtime.NumCPU())
	logLevel = slog.LevelInfo
	logrus.SetLevel(logrus.WarnLevel)
	if verbose {
		logLevel = slog.LevelDebug
		logrus.SetLevel(logrus.DebugLevel)
		logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000000"})
	}
	logrus.SetOutput(os.Stderr)
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	mine, err := os.Stat(path)
	if err != nil {
		return err
	}
	_ = unix.Close(wire.ReadyFD)
	warmCodecs()
	// open counts the connections being answered or waiting for the
	// process their request made; last is when one last ended.
	var open, last atomic.Int64
	last.Store(time.Now().UnixNano())
	// stop closes the listener: no new request, once the engine has
	// closed or died (wire.EngineFD ends) or after ServeIdle. A client
	// whose connection was still queued reads ECONNRESET, so it knows its
	// request was not read and starts a runtime of its own; every
	// accepted connection is answered.
	var stopping atomic.Bool
	stop := func() {
		if stopping.CompareAndSwap(false, true) {
			_ = ln.Close()
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.NewFile(wire.EngineFD, "engine"))
		stop()
	}()
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				if !stopping.Load() {
					slog.Error("runtime server stops taking requests", "err", err)
					stop()
				}
				return
			}
			open.Add(1)
			go func() {
				defer func() {
					last.Store(time.Now().UnixNano())
					open.Add(-1)
				}()
				handle(c)
			}()
		}
	}()
	// It ends once stopped with nothing of its own left to wait for.
	for {
		time.Sleep(ServeIdle / 60)
		lost.sweep()
		if open.Load() > 0 {
			continue
		}
		if time.Since(time.Unix(0, last.Load())) >= ServeIdle {
			stop()
		}
		if !stopping.Load() {
			continue
		}
		<-accepting // every accepted connection is counted in open
		if open.Load() == 0 {
			// Leave the path to a newer server that may have taken it.
			if fi, err := os.Stat(path); err == nil && os.SameFile(fi, mine) {
				_ = os.Remove(path)
			}
			return nil
		}
	}
}

// handle answers one request and, when it made a process, sends its
// status once it has ended.
func handle(c *net.UnixConn) {
	defer c.Close()
	f, err := c.File() // blocking: this goroutine has nothing else to do
	if err != nil {
		return
	}
	defer f.Close()
	// A client that never sends its request does not keep the server.
	_ = unix.SetsockoptTimeval(int(f.Fd()), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: int64(requestTimeout / time.Second)})
	req, files, err := wire.RecvRuntimeRequest(int(f.Fd()))
	if err != nil {
		return
	}
	// Logs go to the server's own stderr: libcontainer's logger is the
	// process's, shared by all requests.
	if lf := files[wire.FileLog]; lf != nil {
		_ = lf.Close()
		delete(files, wire.FileLog)
	}
	lost.begin()
	reply, err := serve(req, files, serverLog)
	for _, fl := range files {
		_ = fl.Close()
	}
	var pf *os.File
	if err != nil {
		reply = &wire.RuntimeReply{Response: *wire.ErrorResponse(err)}
	} else if reply.Pid > 0 {
		// Before the reply: the process is ours until we reap it, so the
		// pid names it.
		pf, _ = pidfd.Open(reply.Pid)
	}
	lost.end(reply.Pid, err != nil)
	werr := wire.WriteJSONLine(f, reply)
	if err != nil || reply.Pid <= 0 {
		return
	}
	ws, err := reap(pf, reply.Pid)
	lost.reaped(reply.Pid)
	if err != nil || werr != nil {
		return
	}
	_, _ = f.Write([]byte(wire.RuntimeStatusPrefix + strconv.Itoa(int(ws)) + "\n"))
}

// lost reaps the server's children that failed calls left.
var lost orphans

// logLevel is the level of the server's own messages.
var logLevel = slog.LevelInfo

// serverLog logs what the server says of cfg's container, to its stderr.
func serverLog(cfg *wire.Config) *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel})).With("container", cfg.ID)
}

// reap waits for the child pid to exit, on the poller through its pidfd
// pf (which it closes), or in wait4 without one (nil), and reaps it.
func reap(pf *os.File, pid int) (unix.WaitStatus, error) {
	if pf != nil {
		pidfd.Wait(pf)
		_ = pf.Close()
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if got == pid {
			return ws, nil
		}
	}
}
