package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

type runConfig struct {
	Dir, Bin, Known string
	Packages        []string
	Run             string
}

// daemon is the dedicated hutch the suite runs against, with its own XDG
// directories under the run's temporary directory.
type daemon struct {
	cmd    *exec.Cmd
	socket string
	log    *os.File
	done   chan error
}

func startDaemon(ctx context.Context, bin, dir, mirror string) (*daemon, error) {
	for _, d := range []string{"run", "data", "config/hutch"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	// Docker's suite is written for dockerd's defaults, live-restore off
	// among them: the daemon's stop then stops what the suite left running.
	cfg, _ := json.Marshal(map[string]any{"registry-mirrors": []string{"http://" + mirror}, "live-restore": false})
	if err := os.WriteFile(filepath.Join(dir, "config/hutch/daemon.json"), cfg, 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return nil, err
	}
	d := &daemon{socket: filepath.Join(dir, "run", "hutch.sock"), log: log, done: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(bin, "hutch"), "daemon")
	d.cmd.Env = append(cleanEnv(),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
	)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { d.done <- d.cmd.Wait() }()
	c, err := d.client()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.Ping(ctx, client.PingOptions{}); err == nil {
			return d, nil
		}
		select {
		case err := <-d.done:
			return nil, fmt.Errorf("hutch daemon exited: %v (log: %s)", err, log.Name())
		default:
		}
		if time.Now().After(deadline) {
			d.Stop()
			return nil, fmt.Errorf("hutch daemon did not answer in 30 s (log: %s)", log.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *daemon) client() (*client.Client, error) {
	return client.New(client.WithHost("unix://" + d.socket))
}

// Stop ends the daemon with SIGTERM, as a user would.
func (d *daemon) Stop() {
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(60 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	d.log.Close()
}

// cleanEnv is the environment without the XDG and DOCKER settings of the
// caller: the daemon and the tests get their own.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "DOCKER_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// pullFrozen pulls every stand-in through the daemon (from docker.io, which
// the mirror answers) and gives it the name the tests use, so that the
// suite's TestMain finds its frozen images in place.
func pullFrozen(ctx context.Context, d *daemon) error {
	c, err := d.client()
	if err != nil {
		return err
	}
	defer c.Close()
	for _, s := range standIns {
		if s.index != nil {
			continue
		}
		ref := "docker.io/" + s.Repo + ":" + s.Tag
		resp, err := c.ImagePull(ctx, ref, client.ImagePullOptions{})
		if err != nil {
			return fmt.Errorf("pulling %s: %w", ref, err)
		}
		for _, err := range resp.JSONMessages(ctx) {
			if err != nil {
				return fmt.Errorf("pulling %s: %w", ref, err)
			}
		}
	}
	_, err = c.ImageTag(ctx, client.ImageTagOptions{Source: "hello-world:latest", Target: "hello-world:frozen"})
	return err
}

// runPackage runs one compiled package against the daemon and returns its
// results; its whole output goes to logPath.
func runPackage(ctx context.Context, cfg runConfig, d *daemon, pkg, logPath string) (*Results, error) {
	args := []string{"-test.v", "-test.count=1", "-test.timeout=20m"}
	if cfg.Run != "" {
		args = append(args, "-test.run", cfg.Run)
	}
	cmd := exec.CommandContext(ctx, testBinary(cfg.Dir, pkg), args...)
	cmd.Dir = filepath.Join(srcDir(cfg.Dir), "integration", pkg)
	cmd.Env = append(cleanEnv(),
		"DOCKER_HOST=unix://"+d.socket,
		"DOCKER_REMOTE_DAEMON=1",
		"DOCKER_ROOTLESS=1",
	)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(logf, &out)
	cmd.Stderr = cmd.Stdout
	runErr := cmd.Run()
	res, err := ParseVerbose(&out)
	if err != nil {
		return nil, err
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		return nil, runErr
	}
	if runErr != nil && !anyFailed(res) {
		// A panic in TestMain, a timeout: the package itself failed.
		res.Tests["(package)"] = Fail
		res.Output["(package)"] = tail(strings.Split(out.String(), "\n"), 30)
	}
	return res, nil
}

func anyFailed(res *Results) bool {
	for _, o := range res.Tests {
		if o == Fail {
			return true
		}
	}
	return false
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// runSuite sets up the stand-ins, the registry and the daemon, runs every
// package and reports against the list. It fails on an unlisted failure.
func runSuite(ctx context.Context, cfg runConfig) error {
	f, err := os.Open(cfg.Known)
	if err != nil {
		return err
	}
	known, err := ParseKnown(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Known, err)
	}
	for _, pkg := range cfg.Packages {
		if _, err := os.Stat(testBinary(cfg.Dir, pkg)); err != nil {
			return fmt.Errorf("integration/%s is not compiled (compat build): %w", pkg, err)
		}
	}
	tmp, err := os.MkdirTemp("", "hutch-compat-")
	if err != nil {
		return err
	}
	defer removeAsMapped(tmp)
	reg, err := startRegistry(ctx, tmp)
	if err != nil {
		return err
	}
	defer reg.Stop()
	if err := pushStandIns(ctx, reg.Addr); err != nil {
		return err
	}
	d, err := startDaemon(ctx, cfg.Bin, tmp, reg.Addr)
	if err != nil {
		return err
	}
	defer d.Stop()
	if err := pullFrozen(ctx, d); err != nil {
		return err
	}
	logDir := filepath.Join(tmp, "logs")
	if v := os.Getenv("COMPAT_LOGS"); v != "" {
		logDir = v
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	var total Verdict
	var unlisted []string
	for _, pkg := range cfg.Packages {
		start := time.Now()
		logPath := filepath.Join(logDir, strings.ReplaceAll(pkg, "/", "-")+".log")
		res, err := runPackage(ctx, cfg, d, pkg, logPath)
		if err != nil {
			return fmt.Errorf("integration/%s: %w", pkg, err)
		}
		entries := known[pkg]
		if cfg.Run != "" {
			entries = onlyRan(entries, res)
		}
		v := Judge(res, entries)
		report(os.Stdout, pkg, v, res, time.Since(start))
		total.Passed += v.Passed
		total.Failed += v.Failed
		total.Skipped += v.Skipped
		total.Listed = append(total.Listed, v.Listed...)
		total.Stale = append(total.Stale, v.Stale...)
		for _, u := range v.Unlisted {
			unlisted = append(unlisted, pkg+" "+u)
		}
	}
	fmt.Printf("\ncompat: %s (Docker 29.8.0): %d passed, %d failed (%d listed), %d skipped; %d list entries pass now\n",
		MobyVersion, total.Passed, total.Failed, len(total.Listed), total.Skipped, len(total.Stale))
	if len(unlisted) > 0 {
		sort.Strings(unlisted)
		return fmt.Errorf("%d failures not in %s:\n  %s", len(unlisted), cfg.Known, strings.Join(unlisted, "\n  "))
	}
	return nil
}

// onlyRan keeps the entries of tests that ran: with -run, the others are
// not stale.
func onlyRan(entries map[string]string, res *Results) map[string]string {
	out := map[string]string{}
	for e, why := range entries {
		if _, ok := res.Tests[e]; ok {
			out[e] = why
		}
	}
	return out
}

func report(w io.Writer, pkg string, v Verdict, res *Results, took time.Duration) {
	fmt.Fprintf(w, "== integration/%s: %d passed, %d failed, %d skipped (%s)\n",
		pkg, v.Passed, v.Failed, v.Skipped, took.Round(time.Second))
	for _, name := range v.Unlisted {
		fmt.Fprintf(w, "  FAIL (not listed) %s\n", name)
		for _, l := range why(res.Output[name]) {
			fmt.Fprintf(w, "      %s\n", l)
		}
	}
	for _, name := range v.Stale {
		fmt.Fprintf(w, "  PASSES NOW (remove from the list) %s\n", name)
	}
}

// why picks the lines of a test's output that say why it failed: the
// assertions (file_test.go:N: ...) if any, else its last lines.
func why(lines []string) []string {
	var out []string
	for _, l := range lines {
		if testLine.MatchString(l) && len(out) < 6 {
			out = append(out, strings.TrimSpace(l))
		}
	}
	if len(out) == 0 {
		return tail(lines, 10)
	}
	return out
}

var testLine = regexp.MustCompile(`^\s+\w+_test\.go:\d+: `)

// removeAsMapped removes the run's directory, whose image layers hold files
// of the user's subordinate ids, from a user namespace with the same
// mapping.
func removeAsMapped(dir string) {
	if os.Geteuid() == 0 {
		os.RemoveAll(dir)
		return
	}
	if out, err := exec.Command("unshare", "--map-auto", "--map-root-user", "rm", "-rf", dir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "compat: removing %s: %v %s\n", dir, err, out)
	}
}
