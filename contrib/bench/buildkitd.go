package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// buildkitd is the build phase's baseline: BuildKit's own buildkitd and
// buildctl at the version hutch embeds, and rootlesskit, as
// contrib/test/buildkitd.sh builds them into one directory.
type buildkitd struct {
	rootlesskit, daemon, buildctl string
}

func newBuildkitd(dir string) (*buildkitd, error) {
	b := &buildkitd{
		rootlesskit: filepath.Join(dir, "rootlesskit"),
		daemon:      filepath.Join(dir, "buildkitd"),
		buildctl:    filepath.Join(dir, "buildctl"),
	}
	for _, p := range []string{b.rootlesskit, b.daemon, b.buildctl} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("the build baseline: %w (bash contrib/test/buildkitd.sh as root builds it)", err)
		}
	}
	return b, nil
}

// command is buildkitd run rootless the way BuildKit's docs/rootless.md
// says, inside rootlesskit (user and mount namespaces; the host's network,
// as buildkitd's rootless RUN steps use it anyway), with the overlayfs
// snapshotter (kernel ≥ 5.11), its state under root and its XDG runtime
// directory (the socket, rootlesskit's state) under runDir.
func (b *buildkitd) command(runDir, root, sock string) []string {
	return []string{b.rootlesskit, "--state-dir=" + filepath.Join(runDir, "rootlesskit"), "--net=host", "--copy-up=/etc",
		b.daemon, "--root", root, "--addr", "unix://" + sock, "--oci-worker-snapshotter=overlayfs"}
}

// commandLine is command as the table shows it.
func (b *buildkitd) commandLine() string {
	args := b.command("RUNDIR", "ROOT", "RUNDIR/buildkitd.sock")
	args[0], args[4] = "rootlesskit", "buildkitd"
	return "XDG_RUNTIME_DIR=RUNDIR " + strings.Join(args, " ")
}

// bkProc is one running rootlesskit + buildkitd.
type bkProc struct {
	cmd     *exec.Cmd
	socket  string
	logPath string
	ready   time.Duration // from the start to the socket's first answer
	done    chan struct{}
	waitErr error
}

// start runs buildkitd on a new root and returns once its socket answers
// and buildctl sees its worker.
func (b *buildkitd) start(ctx context.Context, runDir, root, logPath string) (*bkProc, error) {
	for _, d := range []string{runDir, root} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	p := &bkProc{socket: filepath.Join(runDir, "buildkitd.sock"), logPath: logPath, done: make(chan struct{})}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := b.command(runDir, root, p.socket)
	p.cmd = exec.Command(args[0], args[1:]...)
	// buildkitd takes the rootless defaults (the trace socket under
	// XDG_RUNTIME_DIR) in a user namespace when $USER is not root.
	p.cmd.Env = append(cleanEnv(), "XDG_RUNTIME_DIR="+runDir)
	if os.Getenv("USER") == "" {
		if u, err := user.Current(); err == nil {
			p.cmd.Env = append(p.cmd.Env, "USER="+u.Username)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	deadline := t0.Add(60 * time.Second)
	for {
		if c, err := net.Dial("unix", p.socket); err == nil {
			c.Close()
			p.ready = time.Since(t0)
			break
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("buildkitd exited: %v (see %s)", p.waitErr, logPath)
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("buildkitd did not listen within a minute (see %s)", logPath)
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			p.stop()
			return nil, err
		}
	}
	out, err := exec.CommandContext(ctx, b.buildctl, "--addr", "unix://"+p.socket, "debug", "workers", "-v").CombinedOutput()
	if err == nil && !regexp.MustCompile(`snapshotter:\s+overlayfs`).Match(out) {
		err = errors.New("its worker does not use the overlayfs snapshotter")
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("buildctl debug workers: %w\n%s", err, out)
	}
	return p, nil
}

// stop sends SIGTERM to rootlesskit, which passes it on to buildkitd,
// and waits for it to exit. buildkitd exits 1 after a signal.
func (p *bkProc) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("buildkitd did not stop within 30s of SIGTERM (see %s)", p.logPath)
	}
}

// cleanEnv is the bench's environment without the docker CLI's, buildx's,
// BuildKit's or XDG settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_") && !strings.HasPrefix(kv, "BUILDX_") &&
			!strings.HasPrefix(kv, "BUILDKIT_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	return env
}

// stopTree stops a process (stop) and waits until every process of its
// tree as it was has exited (hutch-buildkit leaves after the engine,
// buildkitd's runc children with it), so that their state can go.
func stopTree(root int, stop func() error) {
	var pids []int
	if children, err := childMap(); err == nil {
		queue := []int{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			pids = append(pids, p)
			queue = append(queue, children[p]...)
		}
	}
	if err := stop(); err != nil {
		progress("   stopping pid %d: %v", root, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range pids {
		for time.Now().Before(deadline) && unix.Kill(p, 0) == nil {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
