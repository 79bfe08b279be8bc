package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// env is what every phase shares: the scratch directory, the registry
// with the test images, and the daemon under test.
type env struct {
	cfg     config
	dir     string
	runDir  string // parent of the daemons' XDG_RUNTIME_DIR
	dataDir string // parent of their XDG_DATA_HOME
	reg     *exec.Cmd
	regAddr string
	busybox string // pullable reference of the busybox test image
	d       *daemon
	starts  int // daemons started, to name their logs
	// daemonNames are the names of the daemons' directories.
	daemonNames []string
	// extracted are the baseline's trees of the pull, removed at the end.
	extracted []string
	ownsWork  bool
}

func newEnv(ctx context.Context, c config) (*env, error) {
	e := &env{cfg: c, dir: c.work}
	if e.dir == "" {
		d, err := os.MkdirTemp("", "hutch-bench-")
		if err != nil {
			return nil, err
		}
		e.dir, e.ownsWork = d, true
	} else if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return nil, err
	}
	var err error
	if e.runDir, err = runtimeParent(c.runtimeDir, e.dir); err != nil {
		e.close()
		return nil, err
	}
	e.dataDir = c.dataDir
	if e.dataDir == "" {
		e.dataDir = e.dir
	}
	progress("bench: scratch directory %s, XDG_RUNTIME_DIR under %s (%s), XDG_DATA_HOME under %s (%s)",
		e.dir, e.runDir, fsType(e.runDir), e.dataDir, fsType(e.dataDir))
	if err := e.startRegistry(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.d != nil {
		e.d.stop()
		e.d = nil
	}
	if e.reg != nil {
		_ = e.reg.Process.Kill()
		_ = e.reg.Wait()
	}
	if e.runDir != "" && e.runDir != e.dir {
		removeAsMapped(e.runDir)
	}
	if e.dataDir != e.dir {
		for _, n := range e.daemonNames {
			removeAsMapped(filepath.Join(e.dataDir, n))
		}
		for _, d := range e.extracted {
			removeAsMapped(d)
		}
	}
	if e.ownsWork && !e.cfg.keep {
		removeAsMapped(e.dir)
	} else {
		progress("bench: scratch directory %s not removed (-work or -keep)", e.dir)
	}
	// The removals free some 120 000 inodes. ext4 without a journal
	// passes over a freed inode when it allocates for six minutes while
	// its inode table is unwritten, one minute once written: whatever
	// runs next, another bench's pull above all, pays for it.
	unix.Sync()
}

// startRegistry runs Debian's docker-registry on a free loopback port.
func (e *env) startRegistry(ctx context.Context) error {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return fmt.Errorf("docker-registry is not installed (bash contrib/test/setup-root.sh installs it): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	e.regAddr = l.Addr().String()
	l.Close()
	dir := filepath.Join(e.dir, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n  secret: hutch-bench\n",
		filepath.Join(dir, "data"), e.regAddr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	e.reg = exec.Command(bin, "serve", cfgPath)
	e.reg.Stdout, e.reg.Stderr = log, log
	if err := e.reg.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + e.regAddr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("docker-registry did not come up on %s (see %s)", e.regAddr, log.Name())
}

// pushBusybox pushes the busybox test image and pulls it into the daemon.
func (e *env) pushBusybox(ctx context.Context) error {
	if e.busybox != "" {
		return nil
	}
	img, err := testimage.Busybox()
	if err != nil {
		return err
	}
	ref := e.regAddr + "/library/busybox:latest"
	if err := testimage.Push(ctx, ref, img); err != nil {
		return fmt.Errorf("pushing busybox: %w", err)
	}
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	if _, err := d.pull(ctx, ref); err != nil {
		return fmt.Errorf("pulling busybox into hutch: %w", err)
	}
	e.busybox = ref
	return nil
}

// daemon returns the daemon under test, starting it when none runs. Every
// daemon of a run shares one set of XDG directories, so images stay.
func (e *env) daemon(ctx context.Context) (*daemon, error) {
	if e.d != nil {
		return e.d, nil
	}
	d, err := e.startDaemon(ctx, "daemon")
	if err != nil {
		return nil, err
	}
	e.d = d
	return d, nil
}

// stopDaemon stops the daemon under test, if one runs.
func (e *env) stopDaemon() error {
	if e.d == nil {
		return nil
	}
	err := e.d.stop()
	e.d = nil
	return err
}

// daemon is one `hutch daemon` process started by the bench.
type daemon struct {
	cmd     *exec.Cmd
	env     []string
	socket  string
	logPath string
	started time.Time
	ready   time.Duration // from start to the first answered /_ping
	done    chan struct{}
	waitErr error
	api     *client.Client
}

// startDaemon starts hutch daemon with private XDG directories named name
// (the same name gives the same storage) and returns once /_ping answers.
func (e *env) startDaemon(ctx context.Context, name string) (*daemon, error) {
	if !slices.Contains(e.daemonNames, name) {
		e.daemonNames = append(e.daemonNames, name)
	}
	runDir := filepath.Join(e.runDir, name)
	dataDir := filepath.Join(e.dataDir, name)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "DOCKER_") && !strings.HasPrefix(kv, "HUTCH_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"XDG_RUNTIME_DIR="+runDir,
		"XDG_DATA_HOME="+filepath.Join(dataDir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dataDir, "config"),
		"HUTCH_SHIM="+e.cfg.shim,
	)
	env = append(env, strings.Fields(e.cfg.daemonEnv)...)
	for _, d := range []string{runDir, filepath.Join(dataDir, "data"), filepath.Join(dataDir, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	e.starts++
	d := &daemon{
		env:     env,
		socket:  filepath.Join(runDir, "hutch.sock"),
		logPath: filepath.Join(e.dir, fmt.Sprintf("daemon-%02d.log", e.starts)),
		done:    make(chan struct{}),
	}
	log, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := append([]string{"daemon"}, strings.Fields(e.cfg.daemonArgs)...)
	d.cmd = exec.Command(e.cfg.hutch, args...)
	d.cmd.Env = env
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.done) }()
	if err := d.waitReady(ctx, 30*time.Second); err != nil {
		d.stop()
		return nil, fmt.Errorf("daemon did not come up: %w (see %s)", err, d.logPath)
	}
	d.api, err = client.New(client.WithHost("unix://" + d.socket))
	if err != nil {
		d.stop()
		return nil, err
	}
	// Negotiate the API version now, not in the first timed call.
	if _, err := d.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// waitReady polls /_ping every half millisecond and records when it first
// answered: the cold start figure.
func (d *daemon) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := d.started.Add(limit)
	hc := unixHTTPClient(d.socket)
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
				d.ready = time.Since(d.started)
				return nil
			}
		}
		if err := sleep(ctx, 500*time.Microsecond); err != nil {
			return err
		}
	}
	return errors.New("timeout waiting for /_ping")
}

// stop sends SIGTERM and waits for the daemon to exit.
func (d *daemon) stop() error {
	if d.api != nil {
		d.api.Close()
	}
	select {
	case <-d.done:
		return d.waitErr
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return d.waitErr
	case <-time.After(60 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("daemon did not stop within 60s of SIGTERM (see %s)", d.logPath)
	}
}

// pull pulls ref through the API and consumes the progress stream; it
// returns the time until the stream ended.
func (d *daemon) pull(ctx context.Context, ref string) (time.Duration, error) {
	t0 := time.Now()
	resp, err := d.api.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return 0, err
	}
	if err := resp.Wait(ctx); err != nil {
		return 0, fmt.Errorf("pull of %s: %w", ref, err)
	}
	return time.Since(t0), nil
}

// docker runs the docker CLI against d.
func (d *daemon) docker(ctx context.Context, dockerCLI, configDir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, dockerCLI, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+d.socket, "DOCKER_CONFIG="+configDir)
	return cmd.CombinedOutput()
}

func unixHTTPClient(socket string) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, "unix", socket)
			},
		},
	}
}

// runtimeParent makes the directory the daemons' XDG_RUNTIME_DIR go in:
// under dir if given, else on /dev/shm when it is a tmpfs (as
// /run/user/UID is on a systemd machine), else under the scratch directory.
func runtimeParent(dir, scratch string) (string, error) {
	if dir == "" {
		dir = scratch
		if fsType("/dev/shm") == "tmpfs" && unix.Access("/dev/shm", unix.W_OK) == nil {
			dir = "/dev/shm"
		}
	}
	if dir == scratch {
		return scratch, nil
	}
	return os.MkdirTemp(dir, "hutch-bench-run-")
}

// fsType names the file system dir is on.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "?"
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// removeAsMapped deletes dir; as a user, from a user namespace that maps
// the subuid range (image layers hold files of those uids).
func removeAsMapped(dir string) {
	if os.Geteuid() == 0 {
		os.RemoveAll(dir)
		return
	}
	if out, err := exec.Command("unshare", "--map-auto", "--map-root-user", "rm", "-rf", dir).CombinedOutput(); err != nil {
		progress("bench: removing %s: %v %s", dir, err, out)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
