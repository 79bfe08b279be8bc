package server

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/pidfd"
)

// reaper collects every child of the shim (it is a subreaper, so orphans
// of the container land here too: its init and exec processes once
// hutch-runtime, their parent, exits) and routes the statuses of the
// processes it was asked about.
//
// A process must be registered before it can be reaped, or its status is
// lost: spawn holds mu while it starts a process (or while hutch-runtime
// answers with the pid of one it created, before it exits and the process
// is handed to the shim), and the reaper takes mu around each reaping
// pass. A process that exits before it is registered is still reaped only
// after registration, so no status is lost and no stale pid can be
// matched.
//
// No SIGCHLD: os/signal costs each shim two threads and 170 KiB of
// resident memory (docs/design.md, Performance goals). A pass runs when the pidfd of a registered
// process becomes readable (it exited; hutch-runtime's, a settle time
// later: see spawn), again shortly after while it is not reaped yet (its
// zombie may still belong to hutch-runtime, which is about to exit), and
// every orphanSweep for orphans nobody registered.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	poke    chan struct{}
}

// orphanSweep is how often processes nobody registered are reaped. Only
// processes outside the container's pid namespace (--pid=host) orphan to
// the shim; inside it, the container's init reaps them.
const orphanSweep = 10 * time.Second

func newReaper() *reaper {
	r := &reaper{waiters: map[int]chan unix.WaitStatus{}, poke: make(chan struct{}, 1)}
	go r.loop()
	return r
}

// spawn runs start (which creates a child) with reaping held off and
// registers the pid it returns. The channel receives the child's status;
// it is nil when start returns pid 0 (nothing to wait for). A child that
// exits is reaped at once, or with settle > 0 that long after, unless a
// pass for another process reaps it first.
//
// hutch-runtime is reaped after a settle time. It is a Go process whose
// threads looked up /proc/thread-self, so each thread has /proc dentries.
// The kernel drops a thread's dentries when it releases the thread, and
// the last thread's release tells the parent that the process can be
// reaped before it drops its own. Reaping at once then drops the
// process's whole /proc directory while that thread still has some of
// its dentries on its list to drop, and shrink_dcache_parent walks the
// directory again and again until that thread, preempted on a busy
// machine, has run (as perf and the kernel's code show; this kernel has
// no kprobes to trace it): in a perf profile of 10 clients starting
// containers, that walk (d_walk under release_task) was 3% of all CPU,
// and about a tenth of that share in a run reaping 20 ms later.
// Nothing waits for its status but the shim's own exit, and the init's
// exit usually reaps it on the way.
func (r *reaper) spawn(start func() (int, error), settle time.Duration) (int, <-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := start()
	if err != nil {
		// Let the reaper collect whatever the failed start left behind.
		r.wake()
		return 0, nil, err
	}
	if pid == 0 {
		return 0, nil, nil
	}
	ch := make(chan unix.WaitStatus, 1)
	r.waiters[pid] = ch
	go r.watch(pid, settle)
	return pid, ch, nil
}

// watch wakes the reaper once pid has exited (settle later), and again
// until its status is delivered.
func (r *reaper) watch(pid int, settle time.Duration) {
	if f, err := pidfd.Open(pid); err == nil {
		pidfd.Wait(f)
		_ = f.Close()
	}
	if settle > 0 {
		time.Sleep(settle)
	}
	for delay := time.Millisecond; r.waiting(pid); delay = min(2*delay, time.Second) {
		r.wake()
		time.Sleep(delay)
	}
}

// waiting reports whether pid's status is still to be delivered.
func (r *reaper) waiting(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.waiters[pid]
	return ok
}

func (r *reaper) wake() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

func (r *reaper) loop() {
	t := time.NewTicker(orphanSweep)
	for {
		select {
		case <-r.poke:
		case <-t.C:
		}
		r.mu.Lock()
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if ch, ok := r.waiters[pid]; ok {
				delete(r.waiters, pid)
				ch <- ws
			}
		}
		r.mu.Unlock()
	}
}

// exitCode is Docker's exit code for a wait status: the code, or 128+signal.
func exitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 255
}
