//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/hutch-engine/hutch/engine/shim/pidfd"
	"github.com/hutch-engine/hutch/internal/procstat"
)

// runtimeServer returns the pid of d's runtime server ("hutch-runtime
// serve" on its runtime.sock), or 0.
func runtimeServer(t *testing.T, d *daemon) int {
	t.Helper()
	sock := filepath.Join(d.Runtime, "hutch", "runtime.sock")
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) >= 3 && filepath.Base(args[0]) == "hutch-runtime" && args[1] == "serve" && args[2] == sock {
			return p
		}
	}
	return 0
}

// containerPid is the host pid of c's init.
func containerPid(t *testing.T, d *daemon, c string) int {
	t.Helper()
	pid, err := strconv.Atoi(dockerOK(t, d, "inspect", "-f", "{{.State.Pid}}", c))
	if err != nil || pid <= 0 {
		t.Fatalf("pid of %s: %v", c, err)
	}
	return pid
}

// One runtime server makes the containers' processes: the inits are its
// children (not with --pid host: their shim's), exit codes of runs and
// execs come through it; when it is killed, running containers keep their
// exit codes (where the kernel records them), and the next step starts a
// new server.
func TestRuntimeServer(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "-d", "--name", "rs-sleep", ref, "sleep", "300")
	srv := runtimeServer(t, d)
	if srv == 0 {
		t.Fatalf("no runtime server below the daemon after a run\n%s", tail(d.Log(), 20))
	}
	sock := filepath.Join(d.Runtime, "hutch", "runtime.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("runtime socket: %v %v, want mode 0600", fi, err)
	}
	if p := parentOf(containerPid(t, d, "rs-sleep")); p != srv {
		t.Errorf("the init's parent is %d %q, want the runtime server %d", p, cmdline(p), srv)
	}
	out, err := d.Docker(t, "run", "--rm", ref, "sh", "-c", "exit 3")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("run exit 3: %v %s", err, out)
	}
	out, err = d.Docker(t, "exec", "rs-sleep", "sh", "-c", "exit 5")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
		t.Errorf("exec exit 5: %v %s", err, out)
	}

	// With the host's pid namespace the shim makes the init itself: it
	// must be the subreaper of what the container leaves behind.
	dockerOK(t, d, "run", "-d", "--pid", "host", "--name", "rs-host", ref, "sleep", "300")
	if p := parentOf(containerPid(t, d, "rs-host")); filepath.Base(firstArg(cmdline(p))) != "hutch-shim" {
		t.Errorf("--pid host: the init's parent is %d %q, want its shim", p, cmdline(p))
	}

	// kill -9 of the server while containers run.
	dockerOK(t, d, "run", "-d", "--name", "rs-exit", ref, "sh", "-c", "while [ ! -e /tmp/go ]; do sleep 0.1; done; exit 7")
	syscall.Kill(srv, syscall.SIGKILL)
	waitGone(t, []int{srv})
	dockerOK(t, d, "exec", "rs-exit", "touch", "/tmp/go")
	code := dockerOK(t, d, "wait", "rs-exit")
	dockerOK(t, d, "stop", "-t", "1", "rs-sleep")
	stopped := dockerOK(t, d, "inspect", "-f", "{{.State.ExitCode}}", "rs-sleep")
	if pidfd.KernelKeepsExit() {
		if code != "7" || stopped != "137" {
			t.Errorf("after the server's death: wait = %s (want 7), stopped container's code %s (want 137)", code, stopped)
		}
	} else if code != "255" || stopped != "255" {
		t.Errorf("after the server's death, without PIDFD_INFO_EXIT: codes %s and %s, want 255 (unknown)", code, stopped)
	}
	if out, err := d.Docker(t, "run", "--rm", ref, "sh", "-c", "exit 4"); err == nil || err.(*exec.ExitError).ExitCode() != 4 {
		t.Errorf("run after the server's death: %v %s", err, out)
	}
	if now := runtimeServer(t, d); now == 0 || now == srv {
		t.Errorf("no new runtime server after the old one's death (pid %d)", now)
	}
	dockerOK(t, d, "rm", "-f", "rs-host", "rs-sleep", "rs-exit")
}

// The server ends with the daemon: at a clean stop, and after kill -9 of
// the daemon once the containers it made have ended.
func TestRuntimeServerEndsWithDaemon(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--rm", ref, "true")
	srv := runtimeServer(t, d)
	if srv == 0 {
		t.Fatalf("no runtime server after a run\n%s", tail(d.Log(), 20))
	}
	d.Stop()
	waitGone(t, []int{srv})
	if syscall.Kill(srv, 0) == nil {
		t.Errorf("runtime server %d outlived the daemon's stop", srv)
	}
	sock := filepath.Join(d.Runtime, "hutch", "runtime.sock")
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("runtime socket after the stop: %v", err)
	}

	d2 := restarted(t, d)
	dockerOK(t, d2, "run", "-d", "--name", "rs-k", ref, "sleep", "300")
	srv = runtimeServer(t, d2)
	init := containerPid(t, d2, "rs-k")
	killDaemons(t, d2)
	// It takes no request, but waits for its container.
	time.Sleep(time.Second)
	if syscall.Kill(srv, 0) != nil {
		t.Fatalf("runtime server %d ended before its container", srv)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Errorf("the dead daemon's runtime server still takes requests")
	}
	syscall.Kill(init, syscall.SIGKILL)
	waitGone(t, []int{srv})
	if syscall.Kill(srv, 0) == nil {
		t.Errorf("runtime server %d (%q) outlived its daemon and its last container", srv, cmdline(srv))
	}
}

// firstArg is args[0], or "".
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// Execs racing the end of their container leave nothing behind: the
// container's stop returns and the runtime server keeps no zombie child.
// An exec whose process was killed in the dying pid namespace left it a
// zombie of the server's there, and the namespace's init could not finish
// dying: the container never exited and `stop -t 0` hung (seen in
// TestTestcontainersNode, a health check every 200 ms racing the stop).
func TestExecRacingStop(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	ctx := context.Background()
	for i := range 6 {
		name := fmt.Sprintf("rs-race-%d", i)
		dockerOK(t, d, "run", "-d", "--name", name, ref, "sleep", "300")
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					// Errors are expected once the container is going.
					ex, err := api.ExecCreate(ctx, name, client.ExecCreateOptions{Cmd: []string{"true"}})
					if err == nil {
						_, _ = api.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true})
					}
				}
			}()
		}
		time.Sleep(time.Duration(50+20*i) * time.Millisecond)
		stopped := make(chan error, 1)
		go func() {
			_, err := d.Docker(t, "stop", "-t", "0", name)
			stopped <- err
		}()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("stop %s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("stop -t 0 of %s with execs racing it hung\n%s", name, tail(d.Log(), 20))
		}
		close(done)
		wg.Wait()
	}
	srv := runtimeServer(t, d)
	if srv == 0 {
		t.Fatal("no runtime server")
	}
	// The server sweeps what failed calls left within a second.
	var zombies []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		zombies = zombies[:0]
		for _, p := range procstat.Children(srv) {
			if p.State == "Z" {
				zombies = append(zombies, p.PID)
			}
		}
		if len(zombies) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(zombies) > 0 {
		t.Errorf("the runtime server keeps %d zombie children: %v", len(zombies), zombies)
	}
}
