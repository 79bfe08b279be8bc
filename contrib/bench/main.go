// Command bench is `make bench`: it measures hutch against baselines taken
// in the same run (docs/design.md, Performance goals) and writes a table, bench/results/latest.json
// and a PNG of the latency distributions.
//
// It runs as the unprivileged user hutch serves (contrib/bench/run.sh
// prepares the machine and switches to that user when started as root),
// starts the real `hutch daemon` with private XDG directories, a
// docker-registry on loopback, and drives them through the Go SDK, the
// docker CLI and runc. Nothing here is a test: no figure fails the run, the
// table says which targets are met.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// config is what the flags choose.
type config struct {
	hutch, shim string // binaries
	runc        string
	docker      string
	results     string // directory for latest.json and latency.png
	work        string // scratch directory ("" = a new one under $TMPDIR)
	large       string // tree the large image copies
	keep        bool   // keep the work directory
	daemonArgs  string // extra arguments of hutch daemon
	daemonEnv   string // extra environment of hutch daemon
	runtimeDir  string // parent of the daemons' XDG_RUNTIME_DIR
	dataDir     string // parent of their XDG_DATA_HOME

	runs       int // seed flow, runc and docker run samples
	pullRuns   int
	coldRuns   int
	buildRuns  int    // build phase: cold and cached builds of each builder
	cliPlugins string // the directory of the docker-buildx plugin
	buildkit   string // the directory of buildkitd, buildctl and rootlesskit
	bkctl      string // the build phase's client of hutch (contrib/bench/bkctl)
	containers int    // concurrency: containers in total
	clients    int    // concurrency: concurrent clients
	bursts     int    // concurrency: bursts of containers each
	sleepers   []int
	only       map[string]bool
}

func main() {
	var c config
	var only, replot string
	flag.StringVar(&c.hutch, "hutch", "bin/hutch", "the hutch binary")
	flag.StringVar(&c.shim, "shim", "", "the hutch-shim binary (default: beside hutch)")
	flag.StringVar(&c.runc, "runc", "", "runc for the baseline (default: /usr/sbin/runc or /usr/bin/runc)")
	flag.StringVar(&c.docker, "docker", "/usr/local/bin/docker", "the docker CLI")
	flag.StringVar(&c.results, "results", "bench/results", "where latest.json and latency.png go")
	flag.StringVar(&c.work, "work", "", "scratch directory (default: a new one under $TMPDIR)")
	flag.StringVar(&c.daemonEnv, "daemon-env", "", "extra environment of hutch daemon, space-separated KEY=VALUE (e.g. GOGC=50)")
	flag.StringVar(&c.runtimeDir, "runtime-dir", "", "parent of the daemons' XDG_RUNTIME_DIR (default: /dev/shm when it is a tmpfs, as /run/user/UID is)")
	flag.StringVar(&c.dataDir, "data-dir", "", "parent of the daemons' XDG_DATA_HOME (default: the scratch directory)")
	flag.StringVar(&c.large, "large-src", "/usr/local/go/src", "the tree the large image copies")
	flag.BoolVar(&c.keep, "keep", false, "keep the scratch directory")
	flag.StringVar(&c.daemonArgs, "daemon-args", "", "extra arguments of hutch daemon (e.g. \"--log-level debug\")")
	flag.IntVar(&c.runs, "runs", 40, "samples of the seed flow, runc run and docker run")
	flag.IntVar(&c.pullRuns, "pull-runs", 9, "pulls of the large image (and baseline extractions), in pairs")
	flag.IntVar(&c.coldRuns, "cold-runs", 10, "daemon cold starts")
	flag.IntVar(&c.buildRuns, "build-runs", 5, "samples of the build phase (a cold build and a cached rebuild by hutch and by buildkitd each)")
	flag.StringVar(&c.cliPlugins, "cli-plugins", "/usr/local/share/hutch-test/cli-plugins", "the docker CLI plugins' directory, with buildx (contrib/test/clients.sh)")
	flag.StringVar(&c.buildkit, "buildkit", "/usr/local/share/hutch-test/buildkit", "buildkitd, buildctl and rootlesskit of the build baseline (contrib/test/buildkitd.sh)")
	flag.StringVar(&c.bkctl, "bkctl", "", "bkctl, the build phase's client of hutch (default: beside this program; contrib/bench/run.sh builds it)")
	flag.IntVar(&c.containers, "containers", 100, "containers of the concurrency run")
	flag.IntVar(&c.clients, "clients", 10, "concurrent clients of the concurrency run")
	flag.IntVar(&c.bursts, "bursts", 5, "bursts of the concurrency run (its p99 is over all their containers)")
	flag.StringVar(&replot, "replot", "", "only redraw the table and the plot of this latest.json into -results")
	flag.StringVar(&only, "only", "", "comma-separated subset: seed,docker,pull,load,net,memory,idle,cold,build,swarm (default all)")
	flag.Parse()
	c.sleepers = []int{10, 100}
	c.only = parseOnly(only)

	if replot != "" {
		if err := redraw(replot, c.results); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseOnly(s string) map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
}

func (c *config) want(phase string) bool { return len(c.only) == 0 || c.only[phase] }

func run(ctx context.Context, c config) error {
	if err := c.resolve(); err != nil {
		return err
	}
	res := &Results{Started: time.Now().UTC(), LoadAvg: map[string]string{"before": loadavg()}}
	res.fillHost(c)
	e, err := newEnv(ctx, c)
	if err != nil {
		return err
	}
	defer e.close()
	res.Host["xdg_runtime_fs"], res.Host["xdg_data_fs"] = fsType(e.runDir), fsType(e.dataDir)

	if c.want("seed") || c.want("docker") || c.want("load") || c.want("memory") || c.want("idle") || c.want("swarm") {
		if err := e.pushBusybox(ctx); err != nil {
			return err
		}
		if info, err := e.d.api.Info(ctx, client.InfoOptions{}); err == nil {
			res.Host["storage_driver"] = info.Info.Driver
		}
	}
	phases := []struct {
		name string
		fn   func(context.Context, *env, *Results) error
	}{
		// The pull goes first: this machine's ext4 has no journal, and
		// such an ext4 skips the inodes freed in the last 60 s (360 s
		// while their inode table is unwritten) each time it allocates
		// one. After the removals of the other phases, an extraction of
		// the large image's 11 500 files took 2.9 s instead of 0.8.
		{"pull", benchPull},
		{"seed", benchSeed},
		{"docker", benchDockerRun},
		{"load", benchLoad},
		{"net", benchNet},
		{"memory", benchMemory},
		{"idle", benchIdle},
		{"cold", benchColdStart},
		{"build", benchBuild},
		{"swarm", benchSwarm},
	}
	for _, p := range phases {
		if !c.want(p.name) {
			continue
		}
		progress("== %s", p.name)
		t0 := time.Now()
		if err := p.fn(ctx, e, res); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		progress("   %s done in %.1fs", p.name, time.Since(t0).Seconds())
	}
	res.LoadAvg["after"] = loadavg()
	res.Finished = time.Now().UTC()
	res.derive()
	res.printTable(os.Stdout)
	if err := os.MkdirAll(c.results, 0o755); err != nil {
		return err
	}
	if err := res.writeJSON(filepath.Join(c.results, "latest.json")); err != nil {
		return err
	}
	if err := res.plot(filepath.Join(c.results, "latency.png")); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(c.results, "latest.json"), filepath.Join(c.results, "latency.png"))
	return nil
}

// redraw prints the table of a results file and draws its plot again.
func redraw(path, dir string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	res.derive()
	res.printTable(os.Stdout)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return res.plot(filepath.Join(dir, "latency.png"))
}

// resolve makes the paths absolute and finds the baselines' programs.
func (c *config) resolve() error {
	var err error
	if c.hutch, err = filepath.Abs(c.hutch); err != nil {
		return err
	}
	if c.shim == "" {
		c.shim = filepath.Join(filepath.Dir(c.hutch), "hutch-shim")
	}
	if c.results, err = filepath.Abs(c.results); err != nil {
		return err
	}
	for _, p := range []string{c.hutch, c.shim} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w (run `make build` first)", err)
		}
	}
	if c.runc == "" {
		for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc"} {
			if _, err := os.Stat(p); err == nil {
				c.runc = p
				break
			}
		}
		if c.runc == "" {
			return fmt.Errorf("runc not found (install the Debian package runc)")
		}
	}
	if c.want("build") {
		if err := c.checkBuild(); err != nil {
			return err
		}
	}
	if c.runs < 1 || c.pullRuns < 1 || c.coldRuns < 1 || c.buildRuns < 1 || c.clients < 1 || c.bursts < 1 || c.containers < c.clients {
		return fmt.Errorf("runs, pull-runs, cold-runs, build-runs, clients and bursts must be ≥ 1, containers ≥ clients")
	}
	return nil
}

// progress reports on stderr what the bench is doing, so that stdout has
// only the table.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
