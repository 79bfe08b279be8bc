package oci

import (
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// Serve answers shims' requests on the unix socket at path, one
// connection per request, for as long as it lives (PROTOTYPE, issue 7).
// The processes it creates (inits, exec processes) are its children: it
// reaps them and writes each one's wait status on the connection of the
// request that created it, as a line "status N".
func Serve(path string) error {
	debug.SetGCPercent(100)
	// The inits get libcontainer's GOMAXPROCS from this environment;
	// the server itself uses every CPU.
	runtime.GOMAXPROCS(runtime.NumCPU())
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	warmCodecs()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			return err
		}
		go handle(c)
	}
}

func handle(c *net.UnixConn) {
	defer c.Close()
	f, err := c.File()
	if err != nil {
		return
	}
	defer f.Close()
	req, files, err := wire.RecvRuntimeRequest(int(f.Fd()))
	if err != nil {
		return
	}
	if lf := files[wire.FileLog]; lf != nil {
		_ = lf.Close()
		delete(files, wire.FileLog)
	}
	var pidfd int = -1
	reply, err := serve(req, files)
	for _, fl := range files {
		_ = fl.Close()
	}
	if err != nil {
		reply = &wire.RuntimeReply{Response: *wire.ErrorResponse(err)}
	} else if reply.Pid > 0 {
		pidfd, _ = unix.PidfdOpen(reply.Pid, unix.PIDFD_NONBLOCK)
	}
	if err := wire.WriteJSONLine(f, reply); err != nil || pidfd < 0 {
		if pidfd >= 0 {
			_ = unix.Close(pidfd)
		}
		return
	}
	ws, err := waitPidfd(pidfd, reply.Pid)
	if err != nil {
		return
	}
	_, _ = f.Write([]byte("status " + strconv.Itoa(int(ws)) + "\n"))
}

// waitPidfd waits, on the poller, for the child pid (of pidfd) to exit
// and reaps it.
func waitPidfd(pidfd, pid int) (unix.WaitStatus, error) {
	pf := os.NewFile(uintptr(pidfd), "pidfd")
	defer pf.Close()
	rc, err := pf.SyscallConn()
	if err != nil {
		return 0, err
	}
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
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
