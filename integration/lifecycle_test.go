//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The Go SDK drives the whole lifecycle, with the wait registered before
// the start as docker run does.
func TestSDKLifecycle(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   "sdk1",
		Config: &containertypes.Config{Image: ref, Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Labels: map[string]string{"suite": "sdk"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Warnings) != 0 {
		t.Errorf("warnings %v", created.Warnings)
	}
	wait := c.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-wait.Result:
		if res.StatusCode != 4 {
			t.Errorf("wait status %d, want 4", res.StatusCode)
		}
	case err := <-wait.Error:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return")
	}
	insp, err := c.ContainerInspect(ctx, "sdk1", client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := insp.Container.State
	if st.Status != "exited" || st.ExitCode != 4 || st.Running || st.FinishedAt == "" || st.StartedAt == "" {
		t.Errorf("state %+v", st)
	}
	if insp.Container.Name != "/sdk1" || insp.Container.Config.Labels["suite"] != "sdk" || insp.Container.LogPath == "" {
		t.Errorf("inspect: name %q labels %v", insp.Container.Name, insp.Container.Config.Labels)
	}
	list, err := c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "suite=sdk")})
	if err != nil || len(list.Items) != 1 || list.Items[0].Names[0] != "/sdk1" || !strings.HasPrefix(list.Items[0].Status, "Exited (4)") {
		t.Errorf("list by label: %+v %v", list, err)
	}
	// Names and prefixes resolve; an ambiguous prefix says so.
	other, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	common := commonPrefix(created.ID, other.ID)
	if _, err := c.ContainerInspect(ctx, common, client.ContainerInspectOptions{}); common != "" && (err == nil || !strings.Contains(err.Error(), "multiple IDs found")) {
		t.Errorf("ambiguous prefix %q: %v", common, err)
	}
	// A name in use is a conflict; a bad name a bad parameter.
	_, err = c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: "sdk1", Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}})
	if !errdefs.IsConflict(err) {
		t.Errorf("duplicate name: %v", err)
	}
	_, err = c.ContainerCreate(ctx, client.ContainerCreateOptions{Name: "bad/name", Config: &containertypes.Config{Image: ref}})
	if !errdefs.IsInvalidArgument(err) {
		t.Errorf("bad name: %v", err)
	}
	_, err = c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: "127.0.0.1:1/nothing:here"}})
	if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "No such image") {
		t.Errorf("missing image: %v", err)
	}
	for _, id := range []string{created.ID, other.ID} {
		if _, err := c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{}); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("inspect after remove: %v", err)
	}
}

func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// docker run of an image not pulled yet: the daemon answers 404 "No such
// image" and the CLI pulls it, then retries.
func TestRunPullsMissingImage(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	out, err := d.Docker(t, "run", "--rm", ref, "echo", "pulled")
	if err != nil || !strings.Contains(out, "Unable to find image") || !strings.HasSuffix(out, "pulled\n") {
		t.Errorf("docker run of a missing image: %v\n%s", err, out)
	}
}

// The engine's processes are killed with -9: the next daemon finds every
// container in a true state, keeps exit codes the shims recorded, and
// still controls the container that kept running.
func TestKill9Reconcile(t *testing.T) {
	d, ref := pulled(t)
	run := func(d *daemon, args ...string) string {
		t.Helper()
		out, err := d.Docker(t, args...)
		if err != nil {
			t.Fatalf("docker %v: %v\n%s\n%s", args, err, out, d.Log())
		}
		return strings.TrimSpace(out)
	}
	// Without a network of its own: a networked container does not outlive
	// a kill -9 of the daemon (TestRestartEndsNetworklessContainers).
	run(d, "run", "-d", "--name", "alive", "--network", "none", ref, "sleep", "300")
	if _, err := d.Docker(t, "run", "--name", "five", ref, "sh", "-c", "exit 5"); err == nil {
		t.Fatal("exit 5 did not fail docker run")
	}
	run(d, "create", "--name", "fresh", ref, "true")
	ended := run(d, "run", "-d", "--name", "ended", ref, "sh", "-c", "sleep 1; exit 7")

	// Kill -9 the hutch daemon processes only (not the shims).
	killDaemons(t, d)
	// "ended" exits while no daemon runs; its shim records the code.
	time.Sleep(1500 * time.Millisecond)

	d2 := startDaemonEnv(t, d.env, d.Socket)
	states := map[string]string{}
	for _, line := range strings.Split(run(d2, "ps", "-a", "--format", "{{.Names}}={{.State}}:{{.Status}}"), "\n") {
		name, st, _ := strings.Cut(line, "=")
		states[name] = st
	}
	want := map[string]string{"alive": "running:Up", "five": "exited:Exited (5)", "fresh": "created:Created", "ended": "exited:Exited (7)"}
	for name, prefix := range want {
		if !strings.HasPrefix(states[name], prefix) {
			t.Errorf("after kill -9: %s is %q, want %q…", name, states[name], prefix)
		}
	}
	if code := run(d2, "inspect", "--format", "{{.State.ExitCode}}", ended); code != "7" {
		t.Errorf("exit code recorded by the shim lost: %s", code)
	}
	// The adopted container is still under control.
	run(d2, "kill", "alive")
	if st := run(d2, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "alive"); st != "exited 137" {
		t.Errorf("adopted container after kill: %q", st)
	}
	run(d2, "rm", "-f", "alive", "five", "fresh", "ended")
}

// SIGTERM stops the containers gracefully and records their end.
func TestSIGTERMStopsContainers(t *testing.T) {
	d, ref := pulled(t)
	if out, err := d.Docker(t, "run", "-d", "--name", "graceful", ref, "sh", "-c", "trap 'exit 0' TERM; echo ready; while true; do sleep 0.1; done"); err != nil {
		t.Fatal(err, out)
	}
	// The trap must be set before the signal comes: sh is pid 1 and
	// ignores a SIGTERM it has no handler for.
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", "graceful"); return strings.Contains(out, "ready") })
	d.Stop()
	if d.waitErr != nil {
		t.Fatalf("daemon exit: %v", d.waitErr)
	}
	d2 := startDaemonEnv(t, d.env, d.Socket)
	out, err := d2.Docker(t, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}} {{.State.Error}}", "graceful")
	if err != nil || strings.TrimSpace(out) != "exited 0" {
		t.Errorf("after SIGTERM: %q, %v", out, err)
	}
}

func TestContainerSettings(t *testing.T) {
	d, ref := pulled(t)
	run := func(args ...string) (string, error) {
		out, err := d.Docker(t, append([]string{"run", "--rm"}, args...)...)
		return out, err
	}
	host := t.TempDir()
	os.Chmod(host, 0o777)
	os.WriteFile(filepath.Join(host, "in.txt"), []byte("from host"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
		fail bool
	}{
		{"env and workdir", []string{"-e", "A=b", "-w", "/tmp", ref, "sh", "-c", "echo $A $(pwd)"}, "b /tmp\n", false},
		{"user", []string{"-u", "1234:1234", ref, "id"}, "uid=1234(user) gid=1234(user)", false},
		{"user by name", []string{"-u", "user", ref, "id", "-u"}, "1234\n", false},
		{"unknown user", []string{"-u", "nobody2", ref, "id"}, "unable to find user nobody2", true},
		{"hostname", []string{"--hostname", "box1", ref, "cat", "/etc/hostname"}, "box1\n", false},
		{"hosts", []string{"--add-host", "db:10.1.2.3", ref, "cat", "/etc/hosts"}, "10.1.2.3\tdb", false},
		{"bind read", []string{"-v", host + ":/h", ref, "cat", "/h/in.txt"}, "from host", false},
		{"bind write", []string{"-v", host + ":/h", ref, "sh", "-c", "echo hi > /h/out.txt && echo ok"}, "ok", false},
		{"bind ro", []string{"-v", host + ":/h:ro", ref, "sh", "-c", "echo x > /h/no.txt"}, "Read-only file system", true},
		{"bind source not makeable", []string{"-v", "/no/such/dir:/h", ref, "true"}, "error while creating mount source path '/no/such/dir'", true},
		{"read-only rootfs", []string{"--read-only", ref, "touch", "/x"}, "Read-only file system", true},
		{"tmpfs", []string{"--read-only", "--tmpfs", "/scratch", ref, "sh", "-c", "echo t > /scratch/f && cat /scratch/f"}, "t\n", false},
		{"cap drop", []string{"--cap-drop", "CHOWN", ref, "chown", "1:1", "/tmp"}, "Operation not permitted", true},
		{"init", []string{"--init", ref, "ps", "-o", "pid,args"}, "1 /sbin/docker-init -- ps", false},
		{"privileged", []string{"--privileged", ref, "grep", "CapEff", "/proc/self/status"}, "000001ffffffffff", false},
		{"default caps", []string{ref, "grep", "CapEff", "/proc/self/status"}, "00000000a80425fb", false},
		{"cap add", []string{"--network", "none", "--cap-add", "NET_ADMIN", ref, "ip", "link", "set", "lo", "mtu", "1400"}, "", false},
		{"no cap", []string{"--network", "none", ref, "ip", "link", "set", "lo", "mtu", "1400"}, "Operation not permitted", true},
		{"shm size", []string{"--shm-size", "16m", ref, "df", "-k", "/dev/shm"}, "16384", false},
		{"ulimit", []string{"--ulimit", "nofile=100:200", ref, "sh", "-c", "ulimit -n; ulimit -Hn"}, "100\n200\n", false},
		{"stop signal in config", []string{"--stop-signal", "USR1", ref, "true"}, "", false},
		{"network none", []string{"--network", "none", ref, "ls", "/sys/class/net"}, "lo\n", false},
		{"default network", []string{ref, "ip", "-4", "addr", "show", "eth0"}, "inet 172.17.0.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(tc.args...)
			if (err != nil) != tc.fail || !strings.Contains(out, tc.want) {
				t.Errorf("docker run %v = %q, %v; want %q (fail=%v)", tc.args, out, err, tc.want, tc.fail)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(host, "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("bind write not visible on the host: %q %v", b, err)
	}
	// Limits this host cannot enforce are warned about, never silently dropped.
	out, err := d.Docker(t, "run", "--rm", "-m", "64m", "--pids-limit", "50", ref, "true")
	if cgroupV1() && (err != nil || !strings.Contains(out, "WARNING")) {
		t.Errorf("limits on cgroup v1: %v\n%s", err, out)
	}
}

func cgroupV1() bool {
	var st syscall.Statfs_t
	return syscall.Statfs("/sys/fs/cgroup", &st) == nil && st.Type != 0x63677270
}

// Containers on the default network reach the user's loopback services
// through slirp4netns as host.docker.internal (10.0.2.2).
func TestReachHostLoopback(t *testing.T) {
	d, ref := pulled(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello container") })}
	go srv.Serve(l)
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port
	out, err := d.Docker(t, "run", "--rm", ref, "wget", "-qO-", fmt.Sprintf("http://host.docker.internal:%d/", port))
	if err != nil || out != "hello container" {
		t.Errorf("container to host loopback: %q, %v", out, err)
	}
}

var _ = errors.New

// docker pause needs a cgroup freezer: rootless on cgroup v1 has none, and
// says so; where one exists, pause and unpause work.
func TestPause(t *testing.T) {
	d, ref := pulled(t)
	id, err := d.Docker(t, "run", "-d", ref, "sleep", "300")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	defer d.Docker(t, "rm", "-f", id)
	out, err := d.Docker(t, "pause", id)
	if cgroupV1() {
		if err == nil || !strings.Contains(out, "no cgroup freezer") {
			t.Errorf("pause on rootless cgroup v1: %v %q, want the clear refusal", err, out)
		}
		if st, _ := d.Docker(t, "inspect", "--format", "{{.State.Status}}", id); strings.TrimSpace(st) != "running" {
			t.Errorf("a refused pause changed the state to %q", st)
		}
		return
	}
	if err != nil {
		t.Fatalf("pause: %v %s", err, out)
	}
	if st, _ := d.Docker(t, "inspect", "--format", "{{.State.Status}}", id); strings.TrimSpace(st) != "paused" {
		t.Errorf("after pause: %q", st)
	}
	if out, err := d.Docker(t, "unpause", id); err != nil {
		t.Errorf("unpause: %v %s", err, out)
	}
}
