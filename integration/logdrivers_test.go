//go:build integration

package integration

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// countLines is a container command that prints "line 1" … "line n".
func countLines(n string) []string {
	return []string{"sh", "-c", "i=0; while [ $i -lt " + n + " ]; do i=$((i+1)); echo line $i; done"}
}

// runToEnd runs a detached container and waits for its exit.
func runToEnd(t *testing.T, d *daemon, args ...string) string {
	t.Helper()
	out, err := d.Docker(t, append([]string{"run", "-d"}, args...)...)
	if err != nil {
		t.Fatalf("run %v: %v %s", args, err, out)
	}
	id := strings.TrimSpace(out)
	if out, err := d.Docker(t, "wait", id); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("wait: %v %s", err, out)
	}
	return id
}

// gunzipped is the content of the gzip file p.
func gunzipped(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return string(b)
}

// checkTail checks docker logs of a container that printed line 1 … line
// 500: its tail, and all of it in order across rotated files.
func checkTail(t *testing.T, d *daemon, id string) {
	t.Helper()
	if out, err := d.Docker(t, "logs", "--tail", "3", id); err != nil || out != "line 498\nline 499\nline 500\n" {
		t.Errorf("logs --tail 3 = %q, %v", out, err)
	}
	out, err := d.Docker(t, "logs", id)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) < 20 || lines[len(lines)-1] != "line 500" {
		t.Fatalf("logs: %v, %d lines, last %q", err, len(lines), lines[len(lines)-1])
	}
	first := 0
	if _, err := fmt.Sscanf(lines[0], "line %d", &first); err != nil {
		t.Fatalf("first line %q", lines[0])
	}
	for i, l := range lines {
		if want := "line " + strconv.Itoa(first+i); l != want {
			t.Fatalf("logs line %d = %q, want %q (read across the rotated files in order)", i, l, want)
		}
	}
}

// The log drivers hutch has (json-file, local, none), their options as
// Docker checks them, and the daemon's default driver from daemon.json.
func TestLogDrivers(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(conf, []byte(`{"log-driver": "local", "log-opts": {"max-size": "2k", "max-file": "3"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, ref := pulled(t, "--config-file", conf)

	t.Run("daemon default", func(t *testing.T) {
		if out, err := d.Docker(t, "info", "--format", "{{.LoggingDriver}} {{.Plugins.Log}}"); err != nil || strings.TrimSpace(out) != "local [json-file local none]" {
			t.Errorf("info: %q %v", out, err)
		}
		id := runToEnd(t, d, ref, "echo", "hi")
		out, err := d.Docker(t, "inspect", "--format", "{{.HostConfig.LogConfig.Type}} {{json .HostConfig.LogConfig.Config}} [{{.LogPath}}]", id)
		if err != nil || strings.TrimSpace(out) != `local {"max-file":"3","max-size":"2k"} []` {
			t.Errorf("a container naming no driver: %q %v", out, err)
		}
		// Options given with another driver are not merged with the default's.
		id = runToEnd(t, d, "--log-driver", "json-file", ref, "true")
		out, _ = d.Docker(t, "inspect", "--format", "{{.HostConfig.LogConfig.Type}} {{json .HostConfig.LogConfig.Config}}", id)
		if strings.TrimSpace(out) != "json-file {}" {
			t.Errorf("--log-driver json-file: %q", out)
		}
	})

	t.Run("none", func(t *testing.T) {
		// The output still reaches an attached client.
		out, err := d.Docker(t, "run", "--rm", "--log-driver", "none", ref, "echo", "attached")
		if err != nil || out != "attached\n" {
			t.Errorf("run --log-driver none: %q %v", out, err)
		}
		id := runToEnd(t, d, "--log-driver", "none", ref, "echo", "kept nowhere")
		out, err = d.Docker(t, "logs", id)
		if err == nil || !strings.Contains(out, "configured logging driver does not support reading") {
			t.Errorf("logs of a none container: %q %v", out, err)
		}
		// A bad request is answered with its error, not an empty 200.
		if out, err := d.Docker(t, "logs", "--since", "yesterday-ish", runToEnd(t, d, ref, "true")); err == nil {
			t.Errorf("logs --since yesterday-ish: %q", out)
		}
		out, _ = d.Docker(t, "inspect", "--format", "[{{.LogPath}}]", id)
		if strings.TrimSpace(out) != "[]" {
			t.Errorf("LogPath of a none container: %q", out)
		}
		if files, _ := filepath.Glob(filepath.Join(d.Data, "*", "containers", id, "*log*")); len(files) != 0 {
			t.Errorf("none wrote %v", files)
		}
	})

	t.Run("local", func(t *testing.T) {
		// The default's max-size and max-file, local's compression.
		id := runToEnd(t, d, append([]string{ref}, countLines("500")...)...)
		checkTail(t, d, id)
		dir := filepath.Join(d.Data, "*", "containers", id, "local-logs")
		live, _ := filepath.Glob(filepath.Join(dir, "container.log"))
		gz, _ := filepath.Glob(filepath.Join(dir, "container.log.*.gz"))
		if len(live) != 1 || len(gz) != 2 {
			t.Fatalf("local-logs holds %v and %v, want the log and 2 compressed files (max-file 3)", live, gz)
		}
		for _, p := range gz {
			if s := gunzipped(t, p); !strings.Contains(s, "line ") || len(s) > 2000 {
				t.Errorf("%s: %d bytes uncompressed (max-size 2k)", p, len(s))
			}
		}
		id = runToEnd(t, d, append([]string{"--log-opt", "compress=false", ref}, countLines("500")...)...)
		checkTail(t, d, id)
		if gz, _ := filepath.Glob(filepath.Join(d.Data, "*", "containers", id, "local-logs", "*.gz")); len(gz) != 0 {
			t.Errorf("compress=false made %v", gz)
		}
	})

	t.Run("json-file compress", func(t *testing.T) {
		id := runToEnd(t, d, append([]string{"--log-driver", "json-file", "--log-opt", "max-size=1k", "--log-opt", "max-file=4",
			"--log-opt", "compress=true", "--log-opt", "mode=non-blocking", "--log-opt", "max-buffer-size=4m", ref}, countLines("500")...)...)
		checkTail(t, d, id)
		logPath, _ := d.Docker(t, "inspect", "--format", "{{.LogPath}}", id)
		logPath = strings.TrimSpace(logPath)
		gz, _ := filepath.Glob(logPath + ".*.gz")
		plain, _ := filepath.Glob(logPath + ".[0-9]")
		if len(gz) != 3 || len(plain) != 0 {
			t.Errorf("rotated files: %v compressed, %v not", gz, plain)
		}
		for _, p := range gz {
			if s := gunzipped(t, p); !strings.Contains(s, `"stream":"stdout"`) {
				t.Errorf("%s is not json-file lines: %.100q", p, s)
			}
		}
	})

	t.Run("json-file attributes", func(t *testing.T) {
		// Each line carries the labels and variables the options pick, and
		// docker logs --details shows them before it, as Docker does.
		id := runToEnd(t, d, "--log-driver", "json-file", "--label", "team=core", "--label", "app.tier=front end", "--label", "skip=1",
			"-e", "GOFLAGS=-v", "-e", "STAGE=test,1", "--log-opt", "labels=team,absent", "--log-opt", "labels-regex=^app\\.",
			"--log-opt", "env=STAGE", "--log-opt", "env-regex=^GO", ref, "echo", "hi")
		out, err := d.Docker(t, "logs", "--details", id)
		if want := "GOFLAGS=-v,STAGE=test%2C1,app.tier=front+end,team=core hi\n"; err != nil || out != want {
			t.Errorf("logs --details = %q %v, want %q", out, err, want)
		}
		logPath, _ := d.Docker(t, "inspect", "--format", "{{.LogPath}}", id)
		b, err := os.ReadFile(strings.TrimSpace(logPath))
		if err != nil || !strings.Contains(string(b), `"stream":"stdout","attrs":{"GOFLAGS":"-v","STAGE":"test,1","app.tier":"front end","team":"core"},"time":`) {
			t.Errorf("json-file line: %s %v", b, err)
		}
		// Without attribute options: the space alone.
		id = runToEnd(t, d, "--log-driver", "json-file", "--label", "team=core", ref, "echo", "hi")
		if out, err := d.Docker(t, "logs", "--details", id); err != nil || out != " hi\n" {
			t.Errorf("logs --details without attributes = %q %v", out, err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--log-driver", "nosuch"}, "no log driver named 'nosuch' is registered"},
			{[]string{"--log-driver", "syslog"}, `logging driver "syslog" is not supported`},
			{[]string{"--log-opt", "mode=fast"}, "logging mode not supported: fast"},
			{[]string{"--log-opt", "max-buffer-size=4m"}, "max-buffer-size option is only supported with 'mode=non-blocking'"},
			{[]string{"--log-opt", "max-file=1"}, "compression cannot be enabled when max file count is 1"},
			{[]string{"--log-opt", "max-size=-5"}, "invalid value for max-size"},
			{[]string{"--log-opt", "nosuch=1"}, "unknown log opt 'nosuch' for log driver local"},
			{[]string{"--log-driver", "json-file", "--log-opt", "compress=true"}, "compress cannot be true when max-file is less than 2 or max-size is not set"},
			{[]string{"--log-driver", "json-file", "--log-opt", "compress=maybe"}, "invalid value for log opt compress"},
			{[]string{"--log-driver", "json-file", "--log-opt", "labels-regex=("}, "invalid value for log opt labels-regex: error parsing regexp: missing closing ): `(`"},
		} {
			before, _ := d.Docker(t, "ps", "-aq")
			out, err := d.Docker(t, append(append([]string{"create"}, c.args...), ref, "true")...)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("create %v: %v %q, want %q", c.args, err, out, c.want)
			}
			if after, _ := d.Docker(t, "ps", "-aq"); after != before {
				t.Errorf("create %v left a container", c.args)
			}
		}
		// Any option goes with none, as on Docker's daemon (its CLI
		// refuses them before asking).
		_, err := d.Client(t).ContainerCreate(context.Background(), client.ContainerCreateOptions{
			Config:     &containertypes.Config{Image: ref, Cmd: []string{"true"}},
			HostConfig: &containertypes.HostConfig{LogConfig: containertypes.LogConfig{Type: "none", Config: map[string]string{"whatever": "1"}}},
		})
		if err != nil {
			t.Errorf("none with an option: %v", err)
		}
	})
}

// A daemon.json whose log options its driver refuses stops the daemon at
// start, as Docker's does.
func TestLogDriverDefaultRefused(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(conf, []byte(`{"log-driver": "json-file", "log-opts": {"max-file": "zero"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _, _ := daemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hutchBin(t), "daemon", "--config-file", conf)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failed to set log opts") || !strings.Contains(string(out), "max-file") {
		t.Errorf("daemon with a bad log-opts: %v\n%s", err, out)
	}
}
