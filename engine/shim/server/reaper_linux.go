package server

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// reaper collects every child of the shim (it is a subreaper, so orphans
// of the container land here too) and routes the statuses of the processes
// it was asked about.
//
// libcontainer waits for its own helper processes (the first stages of
// "runc init") while it starts a process, so reaping with wait4(-1) must
// never run concurrently with a start: spawn holds mu for the whole start,
// and the reaper takes mu around each reaping pass. A process that exits
// before it is registered is still reaped only after registration, so no
// status is lost and no stale pid can be matched.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	sigc    chan os.Signal
}

func newReaper() *reaper {
	r := &reaper{waiters: map[int]chan unix.WaitStatus{}, sigc: make(chan os.Signal, 1)}
	signal.Notify(r.sigc, unix.SIGCHLD)
	go r.loop()
	return r
}

// spawn runs start (which creates a child) with reaping held off and
// registers the pid it returns. The channel receives the child's status.
func (r *reaper) spawn(start func() (int, error)) (int, <-chan unix.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := start()
	if err != nil {
		// Let the reaper collect whatever the failed start left behind.
		r.poke()
		return 0, nil, err
	}
	ch := make(chan unix.WaitStatus, 1)
	r.waiters[pid] = ch
	r.poke()
	return pid, ch, nil
}

func (r *reaper) poke() {
	select {
	case r.sigc <- unix.SIGCHLD:
	default:
	}
}

func (r *reaper) loop() {
	for range r.sigc {
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
