//go:build integration

package integration

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRestartPolicies: --restart as Docker applies it. on-failure:N
// restarts a failing container N times and leaves it exited with its
// code; always restarts one that exits 0 until a stop, which it then
// heeds; a manual start resets the count. After the daemon's restart,
// always and unless-stopped containers run again, except an
// unless-stopped one the user stopped; a container without a policy stays
// stopped.
func TestRestartPolicies(t *testing.T) {
	ref := busybox(t)
	env, rt, _ := daemonEnv(t)
	sock := filepath.Join(rt, "hutch.sock")
	d := startDaemonEnv(t, env, sock)
	state := func(name string) string {
		out, _ := d.Docker(t, "inspect", "--format", "{{.State.Status}} {{.RestartCount}} {{.State.ExitCode}}", name)
		return strings.TrimSpace(out)
	}
	dockerOK(t, d, "pull", "-q", ref)

	dockerOK(t, d, "run", "-d", "--name", "onfail", "--restart", "on-failure:2", ref, "sh", "-c", "exit 5")
	waitFor(t, func() bool { return state("onfail") == "exited 2 5" })
	if got := dockerOK(t, d, "inspect", "--format", "{{.State.Restarting}} {{.State.Running}}", "onfail"); got != "false false" {
		t.Errorf("on-failure:2 after its restarts: Restarting Running = %q", got)
	}
	// A success is not a failure: no restart.
	dockerOK(t, d, "run", "-d", "--name", "onok", "--restart", "on-failure", ref, "true")
	waitFor(t, func() bool { return strings.HasPrefix(state("onok"), "exited") })
	if got := state("onok"); got != "exited 0 0" {
		t.Errorf("on-failure after exit 0: %q, want no restart", got)
	}

	dockerOK(t, d, "run", "-d", "--name", "always", "--restart", "always", ref, "sh", "-c", "sleep 0.3")
	waitFor(t, func() bool {
		f := strings.Fields(state("always"))
		n := 0
		if len(f) == 3 {
			n, _ = strconv.Atoi(f[1])
		}
		return n >= 2
	})
	dockerOK(t, d, "stop", "always")
	waitFor(t, func() bool { return strings.HasPrefix(state("always"), "exited ") })
	count := strings.Fields(state("always"))[1]
	dockerOK(t, d, "start", "always")
	if f := strings.Fields(state("always")); f[0] != "running" || f[1] != "0" {
		t.Errorf("always after a manual start (count was %s): %v, want running with the count reset", count, f)
	}
	dockerOK(t, d, "stop", "always")

	dockerOK(t, d, "run", "-d", "--name", "us-run", "--restart", "unless-stopped", "--stop-timeout", "1", ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--name", "us-stopped", "--restart", "unless-stopped", "--stop-timeout", "1", ref, "sleep", "300")
	dockerOK(t, d, "stop", "-t", "0", "us-stopped")
	dockerOK(t, d, "run", "-d", "--name", "always-stopped", "--restart", "always", "--stop-timeout", "1", ref, "sleep", "300")
	dockerOK(t, d, "stop", "-t", "0", "always-stopped")
	dockerOK(t, d, "run", "-d", "--name", "none", "--stop-timeout", "1", ref, "sleep", "300")

	d.Stop()
	d = startDaemonEnv(t, env, sock)
	for name, want := range map[string]string{
		"us-run": "running", "always-stopped": "running", "always": "running",
		"us-stopped": "exited", "none": "exited", "onfail": "exited",
	} {
		waitFor(t, func() bool { return strings.HasPrefix(state(name), want+" ") })
	}
	dockerOK(t, d, "rm", "-f", "us-run", "always-stopped", "always", "us-stopped", "none", "onfail", "onok")
}
