//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// engineFacts are what a leak would grow: the engine's open fds and mounts,
// processes below the daemon, files in the runtime state, and writable
// layers in the store (deleted in the background after a removal).
type engineFacts struct {
	fds, mounts, procs, stateFiles, rootfses int
}

func factsOf(t *testing.T, d *daemon) engineFacts {
	t.Helper()
	engine := enginePID(t, d)
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", engine))
	mounts := strings.Count(readProc(t, engine, "mountinfo"), "\n")
	files := 0
	filepath.WalkDir(filepath.Join(d.Runtime, "hutch"), func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && !strings.Contains(p, "/storage/") && !strings.Contains(p, "/rootlesskit/") {
			files++
		}
		return nil
	})
	return engineFacts{fds: len(fds), mounts: mounts, procs: len(descendants(t, d.cmd.Process.Pid)), stateFiles: files, rootfses: len(rootfsLayers(t, d))}
}

// 100 containers through create, start, wait and remove by 10 parallel
// clients: all succeed and nothing leaks.
func TestLoadParallelContainers(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	// Warm up once so that lazily opened things (storage, sockets) exist.
	if out, err := d.Docker(t, "run", "--rm", ref, "true"); err != nil {
		t.Fatal(err, out)
	}
	if err := runOne(ctx, c, ref, "warm-up"); err != nil {
		t.Fatal(err)
	}
	dropSpares(t, d, ref) // so that the layers counted are the containers'
	before := factsOf(t, d)
	const clients, perClient = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < perClient; j++ {
				if err := runOne(ctx, c, ref, fmt.Sprintf("load-%d-%d", i, j)); err != nil {
					errs <- err
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		n++
		if n <= 5 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d runs failed\n%s", n, clients*perClient, tail(d.Log(), 30))
	}
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("containers left: %d %v", len(list.Items), err)
	}
	dropSpares(t, d, ref)
	// Shims and monitors finish a moment after the records go.
	var after engineFacts
	deadline := time.Now().Add(10 * time.Second)
	for {
		after = factsOf(t, d)
		if after.procs <= before.procs && after.mounts <= before.mounts && after.stateFiles <= before.stateFiles && after.fds <= before.fds+2 && after.rootfses <= before.rootfses {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("leak after 100 runs: before %+v, after %+v", before, after)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runOne(ctx context.Context, c *client.Client, ref, name string) error {
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: &containertypes.Config{Image: ref, Cmd: []string{"sh", "-c", "echo " + name}}})
	if err != nil {
		return fmt.Errorf("%s: create: %w", name, err)
	}
	wait := c.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("%s: start: %w", name, err)
	}
	select {
	case res := <-wait.Result:
		if res.StatusCode != 0 {
			return fmt.Errorf("%s: exit %d", name, res.StatusCode)
		}
	case err := <-wait.Error:
		return fmt.Errorf("%s: wait: %w", name, err)
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s: wait timed out", name)
	}
	if _, err := c.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{}); err != nil {
		return fmt.Errorf("%s: remove: %w", name, err)
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A shim killed with -9 leaves its container marked exited, with an error,
// and its process killed.
func TestKilledShim(t *testing.T) {
	d, ref := pulled(t)
	id, err := d.Docker(t, "run", "-d", ref, "sleep", "300")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	init := containerPid(t, d, id)
	// The shim runs as `hutch-shim run …` (or `hutch-shim warm …`, in
	// the container's bundle directory); the container's init is
	// `hutch-runtime init` until it execs the command.
	var killed [][]string
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) > 1 && filepath.Base(args[0]) == "hutch-shim" && !idleWarmShim(p) {
			syscall.Kill(p, syscall.SIGKILL)
			killed = append(killed, args)
		}
	}
	if len(killed) != 1 {
		t.Fatalf("found shims %q, want 1", killed)
	}
	waitFor(t, func() bool {
		out, _ := d.Docker(t, "inspect", "--format", "{{.State.Status}}", id)
		return strings.TrimSpace(out) == "exited"
	})
	out, _ := d.Docker(t, "inspect", "--format", "{{.State.ExitCode}}|{{.State.Error}}", id)
	code, msg, _ := strings.Cut(strings.TrimSpace(out), "|")
	if code == "0" || msg == "" {
		t.Errorf("killed shim recorded as exit %s, error %q", code, msg)
	}
	// What the shim ran does not run on unseen (containerd kills a dead
	// shim's task too).
	waitGone(t, []int{init})
	if syscall.Kill(init, 0) == nil {
		t.Errorf("the container's init %d (%q) still runs after its shim's death was recorded", init, cmdline(init))
	}
	// The container can be removed and the name reused.
	if out, err := d.Docker(t, "rm", "-f", id); err != nil {
		t.Errorf("rm after a killed shim: %v %s", err, out)
	}
}

// Bad input gets Docker-shaped 4xx answers and changes nothing.
func TestBadInputContainers(t *testing.T) {
	d, ref := pulled(t)
	before, _ := d.Docker(t, "ps", "-aq")
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/containers/create", `{"Image":`, 400, "invalid JSON"},
		{"POST", "/containers/create", `{"Image": 5}`, 400, "invalid JSON"},
		{"POST", "/containers/create", `{"Image":"` + ref + `","Cmd":"notalist"}`, 400, ""},
		{"POST", "/containers/create?name=..%2F..%2Fetc", `{"Image":"` + ref + `"}`, 400, "Invalid container name"},
		{"POST", "/containers/create?name=a/b", `{"Image":"` + ref + `"}`, 400, "Invalid container name"},
		{"POST", "/containers/create", `{"Image":"BusyBox"}`, 400, "invalid reference format"},
		{"POST", "/containers/create", `{"Image":"busybox::x"}`, 400, "invalid reference format"},
		{"POST", "/containers/create", `{}`, 400, "config cannot be empty"},
		{"POST", "/containers/create", `{"Cmd":["true"]}`, 400, "no image specified"},
		{"POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"Binds":["/nope:/x:rx"]}}`, 400, `{"message":"invalid mode: rx"}`},
		{"POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"Mounts":[{"Type":"bind","Source":"/nope","Target":"/x"}]}}`, 400, "bind source path does not exist"},
		{"POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"RestartPolicy":{"Name":"sometimes"}}}`, 400, "invalid restart policy"},
		{"POST", "/containers/create", `{"Image":"` + ref + `","Unknown":{"x":1}}`, 201, ""},
		{"GET", "/containers/json?filters=%7Bbad", "", 400, "invalid filter"},
		{"GET", "/containers/json?filters=%7B%22nope%22%3A%7B%22x%22%3Atrue%7D%7D", "", 400, "invalid filter"},
		{"GET", "/containers/json?limit=abc", "", 400, "limit"},
		{"GET", "/containers/..%2F..%2Fetc/json", "", 404, "No such container"},
		{"GET", "/containers/nosuch/logs?stdout=1&tail=-5", "", 404, "No such container"},
		{"GET", "/containers/nosuch/logs", "", 400, `{"message":"You must choose at least one stream"}`},
		{"POST", "/containers/nosuch/stop?t=-1", "", 404, "No such container"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://hutch/v1.47"+tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := unixHTTPClient(d.Socket).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				b.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if resp.StatusCode != tc.code || !strings.Contains(b.String(), tc.msg) {
				t.Errorf("= %d %s, want %d containing %q", resp.StatusCode, b.String(), tc.code, tc.msg)
			}
			if tc.code >= 400 && !strings.HasPrefix(b.String(), `{"message":`) {
				t.Errorf("not Docker's error shape: %s", b.String())
			}
		})
	}
	// Only the one valid create (with an unknown field) made a container.
	after, _ := d.Docker(t, "ps", "-aq")
	if got := len(strings.Fields(after)) - len(strings.Fields(before)); got != 1 {
		t.Errorf("bad input changed the container list by %d, want 1 (the valid create)", got)
	}
	// Bad signals, and start/stop of a container whose state says no.
	id, _ := d.Docker(t, "create", ref, "sleep", "100")
	id = strings.TrimSpace(id)
	for _, tc := range []struct{ args, want string }{
		{"kill -s NOSUCHSIG " + id, "Invalid signal: NOSUCHSIG"},
		{"stop " + id, ""},
		{"logs --tail -3 " + id, ""},
	} {
		out, _ := d.Docker(t, strings.Fields(tc.args)...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("docker %s = %q, want %q", tc.args, out, tc.want)
		}
	}
	ids := strings.Fields(after)
	sort.Strings(ids)
	for _, x := range append(ids, id) {
		d.Docker(t, "rm", "-f", x)
	}
}

// json-file's max-size and max-file rotate the log; logs read across the
// rotated files.
func TestLogRotation(t *testing.T) {
	d, ref := pulled(t)
	id, err := d.Docker(t, "run", "-d", "--log-opt", "max-size=1k", "--log-opt", "max-file=3", ref,
		"sh", "-c", "i=0; while [ $i -lt 500 ]; do i=$((i+1)); echo line $i; done")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	if out, err := d.Docker(t, "wait", id); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("wait: %v %s", err, out)
	}
	logPath, _ := d.Docker(t, "inspect", "--format", "{{.LogPath}}", id)
	logPath = strings.TrimSpace(logPath)
	files, _ := filepath.Glob(logPath + "*")
	if len(files) != 3 {
		t.Errorf("log files %v, want 3 (max-file=3)", files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() > 1024 {
			t.Errorf("%s is %d bytes (max-size=1k), %v", f, st.Size(), err)
		}
	}
	out, _ := d.Docker(t, "logs", "--tail", "3", id)
	if out != "line 498\nline 499\nline 500\n" {
		t.Errorf("logs --tail 3 = %q", out)
	}
	out, _ = d.Docker(t, "logs", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 20 || lines[len(lines)-1] != "line 500" {
		t.Errorf("logs across rotated files: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	// Bad options are refused at create.
	for _, opt := range []string{"max-size=lots", "max-file=0", "nosuch=1"} {
		if out, err := d.Docker(t, "create", "--log-opt", opt, ref, "true"); err == nil {
			t.Errorf("--log-opt %s accepted: %s", opt, out)
		}
	}
	if out, err := d.Docker(t, "create", "--log-driver", "syslog", ref, "true"); err == nil || !strings.Contains(out, "not supported") {
		t.Errorf("--log-driver syslog: %v %s", err, out)
	}
}
