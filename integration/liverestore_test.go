//go:build integration

package integration

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// liveGet fetches url's body (a published httpd), trying again while the
// server is not yet there.
func liveGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	var err error
	for range 50 {
		var resp *http.Response
		if resp, err = c.Get(url); err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.TrimSpace(string(b)), rerr
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", err
}

// keeperPid is the pid of the daemon's keeper (hutch-ns), 0 when none runs.
func keeperPid(d *daemon) int {
	b, err := os.ReadFile(filepath.Join(d.Runtime, "hutch", "keeper.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// waitKeeperGone waits until the keeper pid has exited, and fails the
// test if it has not within limit.
func waitKeeperGone(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the keeper (pid %d) still runs with no container left", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// With live restore, a kill -9 of the engine leaves a container on a user
// network running and reachable on its published port while no engine
// runs; the next daemon adopts it with its network: the port, its name on
// the network, exec.
func TestLiveRestoreKill9(t *testing.T) {
	d, ref := pulled(t, "--live-restore")
	if got := dockerOK(t, d, "info", "--format", "{{.LiveRestoreEnabled}}"); got != "true" {
		t.Fatalf("LiveRestoreEnabled = %q", got)
	}
	dockerOK(t, d, "network", "create", "keepnet")
	addr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "web", "--network", "keepnet", "-p", addr+":80", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Fatalf("published port before the kill: %q, %v", body, err)
	}
	keeper := keeperPid(d)
	if keeper == 0 {
		t.Fatalf("no keeper.pid with live restore\n%s", d.Log())
	}

	killDaemons(t, d)
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port while no engine runs: %q, %v", body, err)
	}

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}}", "web"); st != "running" {
		t.Errorf("web after the restart: %q, want running\n%s", st, d2.Log())
	}
	if got := keeperPid(d2); got != keeper {
		t.Errorf("keeper pid %d after the restart, want the same %d", got, keeper)
	}
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port after the restart: %q, %v", body, err)
	}
	out, err := d2.Docker(t, "run", "--rm", "--network", "keepnet", ref, "sh", "-c", "echo -e 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc web 80")
	if !strings.Contains(out, "up") {
		t.Errorf("web by name from a new container: %q, %v\n%s", out, err, d2.Log())
	}
	if out := dockerOK(t, d2, "exec", "web", "cat", "/www/index.html"); out != "up" {
		t.Errorf("exec in the adopted container: %q", out)
	}
	dockerOK(t, d2, "rm", "-f", "web")
	dockerOK(t, d2, "network", "rm", "keepnet")
	d2.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
	t.Logf("first:\n%s\nsecond:\n%s", d.Log(), d2.Log())
}
