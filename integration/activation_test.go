//go:build integration

package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// activator stands in for a systemd socket unit: it holds the listening
// socket for the daemon's whole life and, whenever a client waits on it
// and no daemon runs, starts `hutch daemon` with the socket as fd 3 and
// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES set, as systemd does
// (systemd-socket-activate starts a daemon once and is tested apart).
type activator struct {
	t      *testing.T
	Socket string
	env    []string
	args   []string
	file   *os.File
	log    *syncBuffer

	mu     sync.Mutex
	starts int
	exits  []error
	cmd    *exec.Cmd
	exited chan struct{} // one value per exit
	stop   chan struct{}
	done   chan struct{}
}

func activate(t *testing.T, args ...string) *activator {
	t.Helper()
	env, rt, _ := daemonEnv(t)
	a := &activator{t: t, Socket: filepath.Join(rt, "hutch.sock"), env: env, args: args, log: &syncBuffer{},
		exited: make(chan struct{}, 16), stop: make(chan struct{}), done: make(chan struct{})}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: a.Socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	if a.file, err = l.File(); err != nil {
		t.Fatal(err)
	}
	l.Close() // the dup in a.file is the socket from now on
	go a.loop()
	t.Cleanup(a.Close)
	return a
}

func (a *activator) loop() {
	defer close(a.done)
	for {
		select {
		case <-a.stop:
			return
		default:
		}
		fds := []unix.PollFd{{Fd: int32(a.file.Fd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 100); err != nil || n == 0 {
			continue
		}
		sh := []string{"-c", `LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=hutch.socket exec "$0" daemon "$@"`, hutchBin(a.t)}
		cmd := exec.Command("sh", append(sh, a.args...)...)
		cmd.Env, cmd.ExtraFiles = a.env, []*os.File{a.file}
		cmd.Stdout, cmd.Stderr = a.log, a.log
		if err := cmd.Start(); err != nil {
			a.t.Errorf("starting the daemon: %v", err)
			return
		}
		a.mu.Lock()
		a.starts++
		a.cmd = cmd
		a.mu.Unlock()
		err := cmd.Wait()
		a.mu.Lock()
		a.exits = append(a.exits, err)
		a.cmd = nil
		a.mu.Unlock()
		a.exited <- struct{}{}
	}
}

// Starts is how many times a client's connection started the daemon.
func (a *activator) Starts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.starts
}

// waitExit waits for the running daemon to exit on its own and checks
// that it exited cleanly, for being idle.
func (a *activator) waitExit(limit time.Duration) {
	a.t.Helper()
	select {
	case <-a.exited:
	case <-time.After(limit):
		a.t.Fatalf("the daemon did not exit when idle\n--- daemon log ---\n%s", a.log.String())
	}
	a.mu.Lock()
	err := a.exits[len(a.exits)-1]
	a.mu.Unlock()
	if err != nil {
		a.t.Fatalf("idle exit with %v\n--- daemon log ---\n%s", err, a.log.String())
	}
}

// stays checks that the daemon is still up after several idle times.
func (a *activator) stays(what string, d time.Duration) {
	a.t.Helper()
	select {
	case <-a.exited:
		a.t.Fatalf("the daemon exited with %s\n--- daemon log ---\n%s", what, a.log.String())
	case <-time.After(d):
	}
}

func (a *activator) Close() {
	close(a.stop)
	a.mu.Lock()
	if a.cmd != nil {
		a.cmd.Process.Signal(unix.SIGTERM)
	}
	a.mu.Unlock()
	<-a.done
	a.file.Close()
}

func (a *activator) docker(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dockerCLI(t), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+a.Socket, "DOCKER_CONFIG="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The first client starts the daemon from the socket systemd holds;
// --idle-exit ends it once no container runs and no client is
// connected, and the next client starts it again. Neither a running
// container nor an open events stream lets it exit.
func TestSocketActivationIdleExit(t *testing.T) {
	const idle = 2 * time.Second
	ref := busybox(t)
	a := activate(t, "--idle-exit", idle.String())

	if out, err := a.docker(t, "version", "--format", "{{.Server.Version}}"); err != nil {
		t.Fatalf("docker version through the socket: %v\n%s\n--- daemon log ---\n%s", err, out, a.log.String())
	}
	if n := a.Starts(); n != 1 {
		t.Fatalf("the first connection started the daemon %d times, want 1", n)
	}
	a.waitExit(time.Minute)
	if !strings.Contains(a.log.String(), "activated=true") || !strings.Contains(a.log.String(), "msg=\"idle: no container running") {
		t.Errorf("the log does not tell the socket from systemd and the idle exit:\n%s", a.log.String())
	}
	if _, err := os.Stat(a.Socket); err != nil {
		t.Fatalf("the daemon removed systemd's socket: %v", err)
	}

	// The next client starts it again; a container keeps it.
	if out, err := a.docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("docker pull after the idle exit: %v\n%s\n--- daemon log ---\n%s", err, out, a.log.String())
	}
	if n := a.Starts(); n != 2 {
		t.Fatalf("%d starts after the idle exit and the next client, want 2", n)
	}
	out, err := a.docker(t, "run", "-d", ref, "sleep", "600")
	if err != nil {
		t.Fatalf("docker run -d: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	a.stays("a container running", 4*idle)
	if out, err := a.docker(t, "rm", "-f", id); err != nil {
		t.Fatalf("docker rm -f: %v\n%s", err, out)
	}
	a.waitExit(time.Minute)

	// An events stream keeps it too, and its end lets it go.
	c, err := client.New(client.WithHost("unix://" + a.Socket))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ev := c.Events(ctx, client.EventsListOptions{})
	if _, err := c.Ping(context.Background(), client.PingOptions{}); err != nil {
		t.Fatalf("ping: %v", err)
	}
	c.Close() // the ping's keep-alive connection: only the stream stays
	a.stays("an events stream open", 4*idle)
	cancel()
	select {
	case err := <-ev.Err:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("events stream ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the events stream did not end")
	}
	a.waitExit(time.Minute)
	if n := a.Starts(); n != 3 {
		t.Errorf("%d starts, want 3", n)
	}
}

// systemd-socket-activate, systemd's own stand-in for a socket unit,
// starts the daemon at the first connection; it exits when idle.
func TestSystemdSocketActivate(t *testing.T) {
	tool, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Fatal("systemd-socket-activate is missing: install Debian's systemd package (contrib/test/setup-root.sh)")
	}
	env, rt, _ := daemonEnv(t)
	sock := filepath.Join(rt, "hutch.sock")
	args := []string{"-l", sock}
	for _, kv := range env {
		args = append(args, "-E", kv) // it passes on only what it is told
	}
	log := &syncBuffer{}
	cmd := exec.Command(tool, append(args, hutchBin(t), "daemon", "--idle-exit", "2s")...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, gone := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); close(gone) }()
	defer func() {
		select {
		case <-gone:
			return
		default:
		}
		cmd.Process.Signal(unix.SIGTERM)
		select {
		case <-gone:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("no exit at SIGTERM\n%s", log.String())
		}
	}()
	var out []byte
	for i := 0; ; i++ {
		c := exec.Command(dockerCLI(t), "version", "--format", "{{.Server.Version}}")
		c.Env = append(os.Environ(), "DOCKER_HOST=unix://"+sock, "DOCKER_CONFIG="+t.TempDir())
		if out, err = c.CombinedOutput(); err == nil {
			break
		}
		if i == 100 { // the tool binds the socket when it has started
			t.Fatalf("docker version: %v\n%s\n--- log ---\n%s", err, out, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("idle exit with %v\n%s", err, log.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("no idle exit\n%s", log.String())
	}
	if !strings.Contains(log.String(), "activated=true") {
		t.Errorf("the daemon did not serve the socket it was given:\n%s", log.String())
	}
}

// The single-UID parent (rootless/single_linux.go) starts the engine
// itself; the socket reaches it the same way.
func TestSocketActivationSingleUID(t *testing.T) {
	a := activate(t, "--idmap", "single", "--idle-exit", "2s")
	for i := 1; i <= 2; i++ {
		if out, err := a.docker(t, "info", "--format", "{{.ServerVersion}}"); err != nil {
			t.Fatalf("docker info, start %d: %v\n%s\n--- daemon log ---\n%s", i, err, out, a.log.String())
		}
		a.waitExit(time.Minute)
	}
	if n := a.Starts(); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
	if !strings.Contains(a.log.String(), "idmap=single") {
		t.Errorf("not in single-UID mode:\n%s", a.log.String())
	}
}
