//go:build integration

package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A person's terminal: docker run -it in tmux gives a prompt, a pty whose
// size follows the window, and exits on Ctrl-D.
func TestTmuxInteractiveShell(t *testing.T) {
	d, ref := pulled(t)
	sock := t.TempDir() + "/tmux.sock"
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	shell := "env DOCKER_HOST=" + d.Host() + " DOCKER_CONFIG=" + t.TempDir() + " " + dockerCLI(t) + " run -it --rm " + ref + " sh"
	tmux("new-session", "-d", "-x", "100", "-y", "30", "-s", "hutch", shell)
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	screen := func() string { return tmux("capture-pane", "-p", "-t", "hutch") }
	waitScreen := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(screen(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("screen never showed %q:\n%s\n--- daemon ---\n%s", want, screen(), tail(d.Log(), 20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitScreen("/ #")
	tmux("send-keys", "-t", "hutch", "tty; stty size; echo mark-$((6*7))", "Enter")
	waitScreen("mark-42")
	if s := screen(); !strings.Contains(s, "/dev/pts/") || !strings.Contains(s, "30 100") {
		t.Errorf("tty/stty size in tmux:\n%s", s)
	}
	tmux("resize-window", "-t", "hutch", "-x", "120", "-y", "40")
	time.Sleep(300 * time.Millisecond)
	tmux("send-keys", "-t", "hutch", "stty size; echo mark2-$((6*7))", "Enter")
	waitScreen("mark2-42")
	if s := screen(); !strings.Contains(s, "40 120") {
		t.Errorf("the pty did not follow the resize:\n%s", s)
	}
	// Ctrl-C interrupts the foreground command, Ctrl-D ends the shell.
	tmux("send-keys", "-t", "hutch", "sleep 100", "Enter")
	time.Sleep(300 * time.Millisecond)
	tmux("send-keys", "-t", "hutch", "C-c")
	tmux("send-keys", "-t", "hutch", "echo after-$((1+1))", "Enter")
	waitScreen("after-2")
	tmux("send-keys", "-t", "hutch", "C-d")
	deadline := time.Now().Add(20 * time.Second)
	for exec.Command("tmux", "-S", sock, "has-session", "-t", "hutch").Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("Ctrl-D did not end docker run:\n%s", screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, _ := d.Docker(t, "ps", "-aq"); strings.TrimSpace(out) != "" {
		t.Errorf("--rm left %q", out)
	}
}

var _ = os.Getenv
