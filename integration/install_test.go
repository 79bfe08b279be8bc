//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hutchCmd runs a hutch verb (not the daemon) in env and returns its
// output.
func hutchCmd(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(hutchBin(t), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Without a systemd manager (here: no systemctl at all, as in a
// container), hutch install says so, tells the manual way and still
// creates the docker context, which then reaches a daemon started by
// hand. A second install changes nothing; uninstall removes the context,
// keeps the data unless --purge, and refuses --purge while the daemon runs.
func TestInstallWithoutSystemd(t *testing.T) {
	env, rt, data := daemonEnv(t)
	home, dockerConfig := t.TempDir(), t.TempDir()
	var clean []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			clean = append(clean, kv)
		}
	}
	env = append(clean, "HOME="+home, "DOCKER_CONFIG="+dockerConfig)
	noSystemd := append(append([]string{}, env...), "PATH=/nonexistent")
	env = append(env, "PATH="+os.Getenv("PATH"))
	sock := filepath.Join(rt, "hutch.sock")

	out, err := hutchCmd(t, noSystemd, "install", "--use")
	if err != nil {
		t.Fatalf("hutch install: %v\n%s", err, out)
	}
	for _, want := range []string{
		"created the docker context hutch (unix://" + sock + ")",
		"made hutch the current docker context",
		"hutch is not installed as a service: no systemd manager: systemctl is not installed.",
		hutchBin(t) + " daemon &",
		"export DOCKER_HOST=unix://" + sock,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hutch install does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "systemd")); !os.IsNotExist(err) {
		t.Errorf("unit files written without systemd: %v", err)
	}

	d := startDaemonEnv(t, env, sock)
	docker := func(args ...string) (string, error) {
		cmd := exec.Command(dockerCLI(t), args...)
		cmd.Env = env // no DOCKER_HOST: the current context decides
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := docker("context", "show"); err != nil || out != "hutch" {
		t.Errorf("docker context show: %q %v, want hutch", out, err)
	}
	if out, err := docker("version", "--format", "{{.Server.Os}}"); err != nil || out != "linux" {
		t.Fatalf("docker version through the context: %q %v\n--- daemon log ---\n%s", out, err, d.Log())
	}

	out, err = hutchCmd(t, noSystemd, "install", "--use")
	if err != nil || !strings.Contains(out, "The docker context hutch is already there: nothing changed.") || strings.Contains(out, "created") {
		t.Errorf("a second hutch install: %v\n%s", err, out)
	}

	out, err = hutchCmd(t, noSystemd, "uninstall", "--purge")
	if err == nil || !strings.Contains(out, "hutch daemon is running") || !strings.Contains(out, "stop it before --purge") {
		t.Errorf("uninstall --purge with the daemon running: %v\n%s", err, out)
	}
	if out, err := docker("context", "show"); err != nil || out != "hutch" {
		t.Errorf("the refused purge changed the context: %q %v", out, err)
	}

	d.Stop()
	out, err = hutchCmd(t, noSystemd, "uninstall")
	if err != nil || !strings.Contains(out, "removed the docker context hutch") || !strings.Contains(out, "stay in "+filepath.Join(data, "hutch")) {
		t.Errorf("hutch uninstall: %v\n%s", err, out)
	}
	if out, err := docker("context", "show"); err != nil || out != "default" {
		t.Errorf("docker context show after uninstall: %q %v, want default", out, err)
	}
	if _, err := os.Stat(filepath.Join(data, "hutch")); err != nil {
		t.Errorf("uninstall without --purge removed the data: %v", err)
	}
	out, err = hutchCmd(t, noSystemd, "uninstall", "--purge")
	if err != nil || !strings.Contains(out, "removed "+filepath.Join(data, "hutch")) || !strings.Contains(out, "removed "+filepath.Join(rt, "hutch")) {
		t.Errorf("hutch uninstall --purge: %v\n%s", err, out)
	}
	for _, p := range []string{filepath.Join(data, "hutch"), filepath.Join(rt, "hutch")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left after --purge: %v", p, err)
		}
	}
	out, err = hutchCmd(t, noSystemd, "uninstall")
	if err != nil || !strings.Contains(out, "hutch is not installed: nothing to remove.") {
		t.Errorf("a second uninstall: %v\n%s", err, out)
	}
}
