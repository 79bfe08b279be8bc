//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// hutchBin is the hutch binary under test: $HUTCH_BIN, else ../bin/hutch.
func hutchBin(t testing.TB) string {
	if b := os.Getenv("HUTCH_BIN"); b != "" {
		return b
	}
	b, err := filepath.Abs("../bin/hutch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("hutch binary not found (run `make build` or set HUTCH_BIN): %v", err)
	}
	return b
}

// daemon is one `hutch daemon` started by a test, with private XDG dirs.
type daemon struct {
	t       testing.TB
	cmd     *exec.Cmd
	env     []string
	Runtime string // XDG_RUNTIME_DIR
	Data    string // XDG_DATA_HOME
	Socket  string
	log     *syncBuffer
	done    chan struct{}
	waitErr error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemonEnv builds an environment with private XDG dirs under a temp dir.
func daemonEnv(t testing.TB) (env []string, runtimeDir, dataDir string) {
	base := t.TempDir()
	runtimeDir = filepath.Join(base, "run")
	dataDir = filepath.Join(base, "data")
	for _, d := range []string{runtimeDir, dataDir, filepath.Join(base, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Image layers hold files of the subuid range, which the user can only
	// delete from inside a user namespace with the same mapping.
	t.Cleanup(func() { removeAsMapped(t, dataDir) })
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "DOCKER_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"XDG_RUNTIME_DIR="+runtimeDir,
		"XDG_DATA_HOME="+dataDir,
		"XDG_CONFIG_HOME="+filepath.Join(base, "config"),
	)
	return env, runtimeDir, dataDir
}

// startDaemon starts hutch daemon and waits until /_ping answers. It is
// stopped with SIGTERM when the test ends, and must then exit cleanly.
func startDaemon(t testing.TB, args ...string) *daemon {
	t.Helper()
	env, rt, data := daemonEnv(t)
	d := startDaemonEnv(t, env, filepath.Join(rt, "hutch.sock"), args...)
	d.Runtime, d.Data = rt, data
	return d
}

func startDaemonEnv(t testing.TB, env []string, socket string, args ...string) *daemon {
	t.Helper()
	// The suite's daemons stop their containers when they stop, so that
	// no test leaves processes behind; the live-restore tests ask for it.
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--live-restore") }) {
		args = append([]string{"--live-restore=false"}, args...)
	}
	return startDaemonCmd(t, env, socket, exec.Command(hutchBin(t), append([]string{"daemon"}, args...)...))
}

// startDaemonCmd starts cmd, which runs hutch daemon (through a wrapper,
// for example), as startDaemonEnv does.
func startDaemonCmd(t testing.TB, env []string, socket string, cmd *exec.Cmd) *daemon {
	t.Helper()
	d := &daemon{t: t, env: env, Socket: socket, log: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = cmd
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { d.Stop() })
	if err := d.waitReady(30 * time.Second); err != nil {
		t.Fatalf("daemon did not come up: %v\n--- daemon log ---\n%s", err, d.log.String())
	}
	return d
}

func (d *daemon) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	hc := unixHTTPClient(d.Socket)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("daemon exited: %v", d.waitErr)
		default:
		}
		resp, err := hc.Get("http://hutch/_ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("timeout waiting for /_ping")
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *daemon) Stop() {
	d.t.Helper()
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.t.Errorf("daemon did not stop within 30s of SIGTERM\n%s", d.log.String())
		return
	}
	if d.waitErr != nil {
		d.t.Errorf("daemon exited with %v after SIGTERM\n%s", d.waitErr, d.log.String())
	}
}

// Log is what the daemon wrote so far.
func (d *daemon) Log() string { return d.log.String() }

// Host is the DOCKER_HOST value for this daemon.
func (d *daemon) Host() string { return "unix://" + d.Socket }

// Client is a Go SDK client negotiating the API version, as users make it.
func (d *daemon) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHost(d.Host()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Docker runs the real docker CLI against this daemon.
// dockerOK runs the docker CLI and fails the test when it fails; it
// returns the output, trimmed.
func dockerOK(t testing.TB, d *daemon, args ...string) string {
	t.Helper()
	out, err := d.Docker(t, args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s\n--- daemon log ---\n%s", strings.Join(args, " "), err, out, d.Log())
	}
	return strings.TrimSpace(out)
}

func (d *daemon) Docker(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dockerCLI(t), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func dockerCLI(t testing.TB) string {
	for _, p := range []string{"/usr/local/bin/docker", "/usr/bin/docker"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("the docker CLI is not installed at /usr/local/bin/docker")
	return ""
}

// Hutch runs another verb of the hutch binary with the daemon's environment.
func (d *daemon) Hutch(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(hutchBin(t), args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func unixHTTPClient(socket string) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, "unix", socket)
			},
		},
	}
}

// rawRequest sends one HTTP request over the socket and returns status and body.
func (d *daemon) rawRequest(t testing.TB, method, path, host string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://hutch"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := unixHTTPClient(d.Socket).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// rawStatus writes one request line (and a Host header) on a fresh
// connection and returns the status code of the answer.
func rawStatus(t testing.TB, socket, requestLine string) int {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "%s\r\nHost: x\r\nConnection: close\r\n\r\n", requestLine)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", requestLine, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func mkdirTempShared() (string, error) {
	d, err := os.MkdirTemp("", "hutch-shared-")
	if err == nil {
		atExit = append(atExit, func() { os.RemoveAll(d) })
	}
	return d, err
}

// atExit runs after every test, for what tests share (the registry).
var atExit []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(atExit) - 1; i >= 0; i-- {
		atExit[i]()
	}
	os.Exit(code)
}

// removeAsMapped deletes dir from a user namespace that maps the user's
// subuid range (util-linux unshare --map-auto), as `podman unshare rm`.
func removeAsMapped(t testing.TB, dir string) {
	if os.Geteuid() == 0 {
		os.RemoveAll(dir)
		return
	}
	out, err := exec.Command("unshare", "--map-auto", "--map-root-user", "rm", "-rf", dir).CombinedOutput()
	if err != nil {
		t.Logf("removing %s in a user namespace: %v %s", dir, err, out)
	}
}
