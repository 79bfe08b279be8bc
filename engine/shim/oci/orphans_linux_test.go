package oci

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/internal/procstat"
)

// child starts a process of this test's and returns its pid; nothing
// waits for it but the test and the sweeps.
func child(t *testing.T, args ...string) int {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	})
	return pid
}

// state is pid's state letter, "" once it is reaped.
func state(pid int) string {
	_, f, ok := procstat.Read(strconv.Itoa(pid))
	if !ok {
		return ""
	}
	return f[0]
}

func waitZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); state(pid) != "Z"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d never exited (state %q)", pid, state(pid))
		}
	}
}

func TestOrphansReapedAfterFailedCall(t *testing.T) {
	var o orphans
	orphan, made := child(t, "true"), child(t, "true")
	waitZombie(t, orphan)
	waitZombie(t, made)

	// No call failed: nothing is swept.
	o.begin()
	o.end(0, false)
	o.sweep()
	if state(orphan) != "Z" {
		t.Fatal("an exited child was reaped though no call failed")
	}

	// A call failed while another is under way: that one's libcontainer
	// may be about to wait for its own children.
	o.begin()
	o.begin()
	o.end(0, true)
	if state(orphan) != "Z" || state(made) != "Z" {
		t.Fatal("children reaped while a call was under way")
	}
	// The last call ends, having made `made`, which its handler reaps.
	o.end(made, false)
	if s := state(orphan); s != "" {
		t.Fatalf("orphan not reaped once no call was under way (state %q)", s)
	}
	if state(made) != "Z" {
		t.Fatal("the process a request made was reaped by the sweep")
	}
	var ws unix.WaitStatus
	if got, err := unix.Wait4(made, &ws, unix.WNOHANG, nil); got != made || err != nil {
		t.Fatalf("handler's wait4 = %d, %v", got, err)
	}
	o.reaped(made)
	if o.dirty {
		t.Fatal("still dirty with no orphan left")
	}
}

func TestOrphansSweptOnceExited(t *testing.T) {
	var o orphans
	slow := child(t, "sleep", "0.3")
	o.begin()
	o.end(0, true)
	if state(slow) == "" || !o.dirty {
		t.Fatalf("a live orphan: state %q, dirty %v", state(slow), o.dirty)
	}
	waitZombie(t, slow)
	o.sweep()
	if s := state(slow); s != "" || o.dirty {
		t.Fatalf("orphan left after it exited: state %q, dirty %v", s, o.dirty)
	}
}

// A pid reused by a new request's process before the first owner's
// handler says it reaped it stays known.
func TestOrphansPidKnownTwice(t *testing.T) {
	var o orphans
	reused := child(t, "true")
	waitZombie(t, reused)
	o.begin()
	o.end(reused, false) // the first owner
	o.begin()
	o.end(reused, false) // its pid's next owner, before the first's reaped
	o.reaped(reused)
	o.begin()
	o.end(0, true)
	if state(reused) != "Z" {
		t.Fatal("the next owner's process was swept")
	}
}
