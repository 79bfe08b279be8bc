package oci

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// orphans reaps what libcontainer leaves of a call that failed half-way.
// Its nsexec stages are made with CLONE_PARENT, so they are the server's
// children; libcontainer waits for each only on its way to success, and a
// per-step hutch-runtime left the rest to the shim (a subreaper) by
// exiting. The long-lived server must reap them itself: an exec whose
// process was killed in the container's dying pid namespace left that
// process a zombie there, and the namespace's init cannot finish dying
// while one is unreaped (zap_pid_ns_processes), so the container never
// exited and its stop hung (TestTestcontainersNode, a health check racing
// `stop -t 0`).
//
// A child is an orphan when no call is under way (no libcontainer code is
// about to wait for it) and no handler waits for it (it is not a process
// a request made). Sweeps run only after a failed call, until one finds
// no orphan left alive.
type orphans struct {
	mu       sync.Mutex
	inflight int // libcontainer calls under way
	// known are the processes requests made, which their handlers reap;
	// a count, as a pid reused before its first owner's reaped is known
	// twice.
	known map[int]int
	dirty bool // a call failed and its orphans may be left
}

// begin marks a libcontainer call under way.
func (o *orphans) begin() {
	o.mu.Lock()
	o.inflight++
	o.mu.Unlock()
}

// end marks the call done: pid (when > 0) is the process it made, which
// its handler reaps; failed says that it may have left orphans.
func (o *orphans) end(pid int, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pid > 0 {
		if o.known == nil {
			o.known = map[int]int{}
		}
		o.known[pid]++
	}
	o.inflight--
	if failed {
		o.dirty = true
	}
	o.sweepLocked()
}

// reaped says the handler has reaped pid.
func (o *orphans) reaped(pid int) {
	o.mu.Lock()
	if o.known[pid]--; o.known[pid] <= 0 {
		delete(o.known, pid)
	}
	o.mu.Unlock()
}

// sweep reaps the orphans that have exited, if a failed call may have
// left some and none is under way.
func (o *orphans) sweep() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sweepLocked()
}

func (o *orphans) sweepLocked() {
	if !o.dirty || o.inflight > 0 {
		return
	}
	alive := false
	for _, c := range procstat.Children(os.Getpid()) {
		if o.known[c.PID] > 0 {
			continue
		}
		if c.State != "Z" {
			alive = true // swept again once it has exited
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(c.PID, &ws, unix.WNOHANG, nil)
	}
	o.dirty = alive
}
