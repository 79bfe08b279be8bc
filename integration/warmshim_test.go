//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// warmShims lists the shims that wait for a container below the daemon.
func warmShims(t *testing.T, d *daemon) []int {
	t.Helper()
	var out []int
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if idleWarmShim(p) {
			out = append(out, p)
		}
	}
	return out
}

// idleWarmShim reports whether pid is a shim kept ready for the next
// container ("hutch-shim warm RUNTIME"). One that took a container keeps
// its command line but works in the container's bundle directory.
func idleWarmShim(pid int) bool {
	args := cmdline(pid)
	if len(args) < 2 || filepath.Base(args[0]) != "hutch-shim" || args[1] != "warm" {
		return false
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return err == nil && cwd == "/"
}

// waitPIDsGone waits until none of pids exists; false after 10 s.
func waitPIDsGone(pids []int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := false
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil && len(cmdline(p)) > 0 {
				alive = true
			}
		}
		if !alive {
			return true
		}
	}
	return false
}

// Once containers start, a shim waits ready for the next one; it goes
// when the daemon stops, cleanly or killed with -9, and a daemon started
// again starts containers as before.
func TestWarmShimLifetime(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := "SIGTERM"
		if kill {
			name = "kill -9"
		}
		t.Run(name, func(t *testing.T) {
			d, ref := pulled(t)
			dockerOK(t, d, "run", "--rm", ref, "true")
			var warm []int
			for deadline := time.Now().Add(10 * time.Second); len(warm) == 0; time.Sleep(20 * time.Millisecond) {
				if warm = warmShims(t, d); time.Now().After(deadline) {
					t.Fatal("no warm shim after a container started")
				}
			}
			if len(warm) != 1 {
				t.Errorf("warm shims: %v, want one", warm)
			}
			if out := dockerOK(t, d, "run", "--rm", ref, "echo", "from a warm shim"); out != "from a warm shim" {
				t.Errorf("run through the warm shim: %q", out)
			}
			warm = warmShims(t, d)
			if kill {
				killDaemons(t, d)
			} else {
				d.Stop()
			}
			if !waitPIDsGone(warm) {
				t.Errorf("warm shims %v outlived the daemon", warm)
			}
			if kill {
				d2 := startDaemonEnv(t, d.env, d.Socket)
				if out := dockerOK(t, d2, "run", "--rm", ref, "echo", "again"); out != "again" {
					t.Errorf("run after the restart: %q", out)
				}
			}
		})
	}
}
