package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// warmups are runs before the measured ones, not counted: the first
// start pays for page-cache misses on the binaries.
const warmups = 3

// seedPhases name the calls of one seed flow, in order.
var seedPhases = []string{"create", "wait-register", "start", "wait", "logs", "remove"}

// benchSeed measures the seed flow over the API against `runc run` of the
// same rootfs, and against the same flow with `--security-opt
// seccomp=unconfined` (what Docker's default seccomp profile costs a
// start), alternating the three so that load on the machine falls on all
// alike.
func benchSeed(ctx context.Context, e *env, res *Results) error {
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	b, err := newRuncBundle(ctx, e, []string{"echo", "hello"})
	if err != nil {
		return err
	}
	ph := newPhases(seedPhases...)
	for i := range warmups + e.cfg.runs {
		rt, err := b.run(ctx, fmt.Sprintf("bench-%d", i))
		if err != nil {
			return fmt.Errorf("runc run: %w", err)
		}
		// The two flows take turns going first.
		var st, ut time.Duration
		for j := range 2 {
			if (i+j)%2 == 0 {
				st, err = seedFlow(ctx, d.api, e.busybox, nil, ph, i >= warmups)
			} else {
				ut, err = seedFlow(ctx, d.api, e.busybox, unconfined, nil, false)
			}
			if err != nil {
				return fmt.Errorf("seed flow (%d): %w (daemon log %s)", j, err, d.logPath)
			}
		}
		if i >= warmups {
			res.Runc.add(rt)
			res.Seed.add(st)
			res.SeedUnconfined.add(ut)
		}
	}
	res.SeedPhases = ph.medians()
	return nil
}

// unconfined is the seed flow's host config without the seccomp filter.
var unconfined = &containertypes.HostConfig{SecurityOpt: []string{"seccomp=unconfined"}}

// seedFlow runs `echo hello` the way an SDK user does: create, register a
// wait for the next exit, start, wait, read the logs, remove. hc is the
// create's host config (nil: the defaults). It returns the time of the
// whole, and adds each call's time to ph when record is set.
func seedFlow(ctx context.Context, api *client.Client, ref string, hc *containertypes.HostConfig, ph *phases, record bool) (time.Duration, error) {
	mark := time.Now()
	t0 := mark
	step := func(name string) {
		now := time.Now()
		if record && ph != nil {
			ph.dists[name].add(now.Sub(mark))
		}
		mark = now
	}
	created, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"echo", "hello"}},
		HostConfig: hc,
	})
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	id := created.ID
	step("create")
	wait := api.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
	step("wait-register")
	if _, err := api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	step("start")
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return 0, fmt.Errorf("exit status %d", r.StatusCode)
		}
	case err := <-wait.Error:
		return 0, fmt.Errorf("wait: %w", err)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	step("wait")
	logs, err := api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return 0, fmt.Errorf("logs: %w", err)
	}
	out, err := io.ReadAll(logs)
	logs.Close()
	if err != nil {
		return 0, fmt.Errorf("logs: %w", err)
	}
	// The stream is multiplexed: an 8-byte header, then the line.
	if !bytes.HasSuffix(out, []byte("hello\n")) {
		return 0, fmt.Errorf("logs: %q, want hello", out)
	}
	step("logs")
	if _, err := api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{}); err != nil {
		return 0, fmt.Errorf("remove: %w", err)
	}
	step("remove")
	return time.Since(t0), nil
}

// runcBundle is an OCI bundle of the busybox test image's files, with
// runc's rootless spec, for the baseline.
type runcBundle struct {
	runc, dir, root string
}

// newRuncBundle writes the busybox image's files as the rootfs (owned by
// the user: rootless runc maps only the user's uid) and a config.json from
// `runc spec --rootless` running args without a terminal.
func newRuncBundle(ctx context.Context, e *env, args []string) (*runcBundle, error) {
	b := &runcBundle{runc: e.cfg.runc, dir: filepath.Join(e.dir, "runc", "bundle"), root: filepath.Join(e.dir, "runc", "state")}
	if err := os.MkdirAll(b.root, 0o700); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(b.dir, "config.json")); err == nil {
		return b, nil
	}
	if err := writeBusyboxRootfs(filepath.Join(b.dir, "rootfs")); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, b.runc, "spec", "--rootless", "--bundle", b.dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("runc spec: %w: %s", err, out)
	}
	if err := editSpec(filepath.Join(b.dir, "config.json"), args); err != nil {
		return nil, err
	}
	return b, nil
}

// run is one `runc run` of the bundle, with its output checked.
func (b *runcBundle) run(ctx context.Context, id string) (time.Duration, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, b.runc, "--root", b.root, "run", "--bundle", b.dir, id)
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	el := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, out.String())
	}
	if !strings.Contains(out.String(), "hello") {
		return 0, fmt.Errorf("output %q, want hello", out.String())
	}
	return el, nil
}

// benchDockerRun measures `docker run --rm IMAGE true` through the CLI.
func benchDockerRun(ctx context.Context, e *env, res *Results) error {
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	cfgDir := filepath.Join(e.dir, "docker-config")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return err
	}
	for i := range warmups + e.cfg.runs {
		t0 := time.Now()
		out, err := d.docker(ctx, e.cfg.docker, cfgDir, "run", "--rm", e.busybox, "true")
		el := time.Since(t0)
		if err != nil {
			return fmt.Errorf("docker run: %w: %s (daemon log %s)", err, out, d.logPath)
		}
		if i >= warmups {
			res.DockerRun.add(el)
		}
	}
	// The CLI alone: `docker version` asks the daemon once, so this is
	// the CLI's own start-up plus one round trip.
	for i := range warmups + 10 {
		t0 := time.Now()
		if out, err := d.docker(ctx, e.cfg.docker, cfgDir, "version", "--format", "{{.Server.Version}}"); err != nil {
			return fmt.Errorf("docker version: %w: %s", err, out)
		}
		if i >= warmups {
			res.DockerCLI.add(time.Since(t0))
		}
	}
	return nil
}
