//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	mathrand "math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/client"
)

// killDaemons kills the daemon's own processes with -9 (not the shims).
func killDaemons(t *testing.T, d *daemon) {
	t.Helper()
	var pids []int
	for _, p := range append([]int{d.cmd.Process.Pid}, descendants(t, d.cmd.Process.Pid)...) {
		if args := cmdline(p); p == d.cmd.Process.Pid || len(args) > 1 && args[1] == "daemon" {
			pids = append(pids, p)
		}
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	<-d.done
	waitGone(t, pids)
}

// kill -9 during a pull, once its first layers are stored: after a
// restart no partial image is visible, the stored layers of the unfinished
// image are gone, and the pull can be retried.
func TestKill9DuringPull(t *testing.T) {
	busybox(t)
	base, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	// Six 8 MiB layers above busybox: the kill comes while they are
	// still on their way.
	var layers []v1.Layer
	for i := range 6 {
		l, err := random.Layer(8<<20, types.DockerLayer, random.WithSource(mathrand.NewSource(int64(i))))
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		t.Fatal(err)
	}
	ref := shared.Addr + "/library/multi:kill9"
	if err := testimage.Push(context.Background(), ref, img); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t)
	resp, err := d.Client(t).ImagePull(context.Background(), ref, client.ImagePullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, resp)
	for deadline := time.Now().Add(time.Minute); !hasCompleteLayer(d); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no layer stored within a minute of the pull\n%s", tail(d.Log(), 20))
		}
	}
	killDaemons(t, d)
	resp.Close()

	d2 := restarted(t, d)
	if out := strings.TrimSpace(dockerOK(t, d2, "images", "-q", ref)); out != "" {
		// A pull that finished before the kill is whole: it must run.
		t.Logf("the pull finished before the kill")
		if _, err := d2.Docker(t, "run", "--rm", ref, "true"); err != nil {
			t.Errorf("image %s listed after kill -9 but does not run: %v", out, err)
		}
	}
	if probs := storeProblems(t, d2); len(probs) > 0 {
		t.Errorf("after kill -9 during the pull and a restart:\n%s", strings.Join(probs, "\n"))
	}
	if out, err := d2.Docker(t, "pull", ref); err != nil {
		t.Fatalf("retrying the pull: %v\n%s\n%s", err, out, tail(d2.Log(), 20))
	}
	if out, err := d2.Docker(t, "run", "--rm", ref, "ls", "/"); err != nil {
		t.Errorf("run after the retried pull: %v %s", err, out)
	}
}

// kill -9 while containers are being created, started and removed: after a
// restart every record is in a true state, can be removed, and its name
// reused; nothing half-made blocks anything.
func TestKill9DuringLifecycle(t *testing.T) {
	d, ref := pulled(t)
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := []string{"run", "-d", "--name", fmt.Sprintf("k%d", i), ref, "sleep", "300"}
			if i%3 == 0 {
				args = []string{"run", "--rm", "--name", fmt.Sprintf("k%d", i), ref, "true"}
			}
			d.Docker(t, args...)
		}(i)
	}
	time.Sleep(300 * time.Millisecond)
	killDaemons(t, d)
	wg.Wait()

	d2 := startDaemonEnv(t, d.env, d.Socket)
	out := dockerOK(t, d2, "ps", "-a", "--format", "{{.Names}} {{.State}}")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		name, state, _ := strings.Cut(line, " ")
		switch state {
		case "created", "running", "exited", "dead":
		default:
			t.Errorf("%s is %q after kill -9", name, state)
		}
		if out, err := d2.Docker(t, "rm", "-f", name); err != nil {
			t.Errorf("rm -f %s after kill -9: %v %s", name, err, out)
		}
	}
	for i := 0; i < 12; i++ {
		if out, err := d2.Docker(t, "run", "--rm", "--name", fmt.Sprintf("k%d", i), ref, "true"); err != nil {
			t.Errorf("name k%d cannot be reused: %v %s", i, err, out)
		}
	}
	if out := strings.TrimSpace(dockerOK(t, d2, "ps", "-aq")); out != "" {
		t.Errorf("left over: %q", out)
	}
	// No shim, runtime or container init of the first daemon waits
	// forever.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := shimsOf(d.Runtime)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var what []string
			for _, p := range left {
				what = append(what, fmt.Sprintf("%d %q (parent %d %q)", p, cmdline(p), parentOf(p), cmdline(parentOf(p))))
			}
			t.Fatalf("left by the killed daemon: %s", strings.Join(what, "; "))
		}
	}
}

// shimsOf lists the hutch-shim and hutch-runtime processes (shims, runtimes,
// runtime servers and container inits) whose command line or environment
// names runtimeDir, but not an idle warm shim or the runtime it keeps
// ready, nor a running daemon's runtime server (which waits out its idle
// time): a server whose daemon died is listed.
func shimsOf(runtimeDir string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args := cmdline(pid)
		if len(args) < 2 {
			continue
		}
		if base := filepath.Base(args[0]); (base == "hutch-shim" || base == "hutch-runtime") && !idleWarmShim(pid) && !idleWarmShim(parentOf(pid)) && !daemonsRuntimeServer(pid) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && strings.Contains(string(b), runtimeDir) || strings.Contains(strings.Join(args, " "), runtimeDir) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// daemonsRuntimeServer reports whether pid is "hutch-runtime serve" whose
// parent is a running hutch daemon.
func daemonsRuntimeServer(pid int) bool {
	args := cmdline(pid)
	if len(args) < 2 || args[1] != "serve" {
		return false
	}
	parent := cmdline(parentOf(pid))
	return len(parent) >= 2 && filepath.Base(parent[0]) == "hutch" && parent[1] == "daemon"
}
