//go:build integration && rootmode

package integration

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// As real root hutch runs without rootlesskit, with the same API.
func TestRootModeWithoutRootlesskit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the rootmode tests must run as root (make test builds them only then)")
	}
	env, rt, _ := daemonEnv(t)
	sock := rt + "/root.sock"
	d := startDaemonEnv(t, env, sock, "--host", "unix://"+sock, "--data-root", t.TempDir())
	if kids := children(t, d.cmd.Process.Pid); len(kids) != 0 {
		t.Errorf("root daemon has children %v: rootlesskit should not run", kids)
	}
	self, _ := os.Readlink("/proc/self/ns/user")
	theirs, _ := os.Readlink("/proc/" + itoa(d.cmd.Process.Pid) + "/ns/user")
	if self != theirs {
		t.Errorf("root daemon in user namespace %s, want the initial %s", theirs, self)
	}
	res, err := d.Client(t).Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Info.SecurityOptions {
		if strings.Contains(o, "rootless") {
			t.Errorf("root daemon reports %q", o)
		}
	}
	if out, err := d.Docker(t, "version"); err != nil || !strings.Contains(out, "hutch") {
		t.Errorf("docker version: %v\n%s", err, out)
	}
	// Containers run as real root too (real cgroups, no user namespace).
	ref := busybox(t)
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("pull: %v\n%s\n%s", err, out, d.Log())
	}
	out, err := d.Docker(t, "run", "--rm", ref, "sh", "-c", "echo root ok; cat /proc/self/uid_map")
	if err != nil || !strings.HasPrefix(out, "root ok\n") || !strings.Contains(out, "4294967295") {
		t.Errorf("docker run as root: %v\n%s\n%s", err, out, d.Log())
	}
	// Real root has the cgroup freezer: pause and unpause work.
	id, err := d.Docker(t, "run", "-d", ref, "sleep", "300")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	if out, err := d.Docker(t, "pause", id); err != nil {
		t.Errorf("pause as root: %v %s", err, out)
	}
	if st, _ := d.Docker(t, "inspect", "--format", "{{.State.Status}}", id); strings.TrimSpace(st) != "paused" {
		t.Errorf("after pause: %q", st)
	}
	if out, err := d.Docker(t, "unpause", id); err != nil {
		t.Errorf("unpause as root: %v %s", err, out)
	}
	if out, err := d.Docker(t, "rm", "-f", id); err != nil {
		t.Errorf("rm -f: %v %s", err, out)
	}
}

// Root without CAP_SYS_ADMIN (a container's root: CI jobs in unprivileged
// containers and pods) cannot mount: hutch runs rootless there, as for
// any user, instead of taking the real-root path and failing at the first
// mount.
func TestRootModeWithoutSysAdminRunsRootless(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the rootmode tests must run as root (make test builds them only then)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) not found: %v", err)
	}
	env, rt, _ := daemonEnv(t)
	sock := rt + "/nocap.sock"
	cmd := exec.Command(setpriv, "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--",
		hutchBin(t), "daemon", "--host", "unix://"+sock, "--data-root", t.TempDir())
	d := startDaemonCmd(t, env, sock, cmd)
	self, _ := os.Readlink("/proc/self/ns/user")
	engine, _ := os.Readlink("/proc/" + itoa(enginePID(t, d)) + "/ns/user")
	if engine == "" || engine == self {
		t.Errorf("engine in user namespace %q, want one of its own (rootless), not the initial %s", engine, self)
	}
	res, err := d.Client(t).Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Info.SecurityOptions, "name=rootless") {
		t.Errorf("SecurityOptions %q lack name=rootless", res.Info.SecurityOptions)
	}
	ref := busybox(t)
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("pull: %v\n%s\n%s", err, out, d.Log())
	}
	out, err := d.Docker(t, "run", "--rm", ref, "sh", "-c", "echo nocap ok; cat /proc/self/uid_map")
	if err != nil || !strings.HasPrefix(out, "nocap ok\n") || strings.Contains(out, "4294967295") {
		t.Errorf("docker run under root without CAP_SYS_ADMIN: %v\n%s\n%s", err, out, d.Log())
	}
}
