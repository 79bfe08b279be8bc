package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hutch-engine/hutch/storage/testimage"
	"golang.org/x/sys/unix"
)

// Build is the build figure: a three-stage Dockerfile built cold and again
// fully cached by hutch and by BuildKit's own rootless buildkitd of the
// same version, each cold build on a fresh state, each engine by two
// clients. The goal compares the engines with the same client on both
// sides: bkctl (contrib/bench/bkctl: BuildKit's Go client, the calls
// buildctl makes, over hutch's POST /grpc and /session) → hutch against
// buildctl → buildkitd. buildx, the client users have, is measured on
// both as well (the docker driver → hutch, the remote driver →
// buildkitd), for information: its start alone is some 100 ms (the docker
// CLI starts the plugin twice), buildctl's 10.
type Build struct {
	Dockerfile string `json:"dockerfile"`
	// Hutch is docker buildx build (the docker driver) → hutch.
	Hutch BuildSide `json:"hutch"`
	// BkctlHutch is bkctl → hutch.
	BkctlHutch BuildSide `json:"bkctl_hutch"`
	// Buildkitd is buildctl → buildkitd.
	Buildkitd BuildSide `json:"buildkitd"`
	// BuildxBuildkitd is buildx's remote driver to a buildkitd.
	BuildxBuildkitd BuildSide `json:"buildx_remote_buildkitd"`
	// BuildkitdStart is rootlesskit's start until buildkitd's socket
	// answers; it is no part of buildkitd's builds, while hutch-buildkit's
	// start is part of hutch's cold build.
	BuildkitdStart Dist `json:"buildkitd_start"`
	// The goal's ratios are bkctl → hutch's median over buildctl →
	// buildkitd's; pair ratios are one per sample, bkctl → hutch's over
	// buildctl's run of the same sample.
	ColdRatio        float64   `json:"cold_median_ratio"`
	CachedRatio      float64   `json:"cached_median_ratio"`
	ColdPairRatios   []float64 `json:"cold_pair_ratios"`
	CachedPairRatios []float64 `json:"cached_pair_ratios"`
	// For information: buildx → hutch's median over buildctl →
	// buildkitd's (the goal's figure before bkctl), and the same-client
	// ratios, buildx → hutch's over buildx → buildkitd's.
	BuildxColdRatio       float64 `json:"buildx_hutch_over_buildctl_cold_median_ratio"`
	BuildxCachedRatio     float64 `json:"buildx_hutch_over_buildctl_cached_median_ratio"`
	SameClientColdRatio   float64 `json:"same_client_cold_median_ratio"`
	SameClientCachedRatio float64 `json:"same_client_cached_median_ratio"`
	// IdleBefore is the engine's tree before its first build (the first
	// sample's daemon, started again after busybox was pulled): no
	// hutch-buildkit yet. After is the same tree once it built
	// (hutch-buildkit included), and BuildkitdAfter the baseline's
	// (rootlesskit and buildkitd) after buildctl's builds.
	IdleBefore     MemSample `json:"engine_idle_before_build"`
	After          MemSample `json:"engine_after_builds"`
	BuildkitdAfter MemSample `json:"buildkitd_after_builds"`
	Commands       []string  `json:"commands"`
	Comment        string    `json:"comment"`
}

// BuildSide is one builder's cold builds and cached rebuilds.
type BuildSide struct {
	Cold   BuildSeries `json:"cold"`
	Cached BuildSeries `json:"cached"`
}

// BuildSeries is one kind of build, sampled: the client's wall time, cut
// at the steps' times the build's progress reports (rawjson).
type BuildSeries struct {
	Wall Dist `json:"wall"`
	// ToFirst is from the client's start to the first step's start
	// (client start-up, session, hutch-buildkit's start when cold);
	// Steps is the first step's start to the last step's end; AfterLast
	// the last step's end to the client's exit.
	ToFirst   Dist `json:"to_first_step"`
	Steps     Dist `json:"steps"`
	AfterLast Dist `json:"after_last_step"`
	// StepMedians are each step's duration (median, ms), names with the
	// registry's address as REG and digests left out.
	StepMedians []PhaseTime `json:"step_medians"`
	perStep     map[string]*Dist
	order       []string
}

// buildDockerfile is the measured build; BASE is the busybox test image
// in the bench's loopback registry.
const buildDockerfile = `FROM BASE AS one
RUN mkdir /out && for i in 1 2 3 4 5 6 7 8; do echo "one $i" > /out/one-$i; done

FROM BASE AS two
RUN mkdir /out && seq 1 5000 > /out/two && echo two > /out/name

FROM BASE
COPY --from=one /out/ /one/
COPY --from=two /out/ /two/
RUN cat /one/* /two/name > /all && wc -l /two/two >> /all
`

// buildTag is what every builder names the result.
const buildTag = "bench-build:latest"

// benchBuild measures the build figure. Each sample builds cold, then
// cached, four ways, in an order that alternates:
//   - hutch: a fresh daemon with busybox pulled into it and started again
//     (outside the timing; the memory phase reads the idle tree so), the
//     docker CLI with buildx;
//   - the same with bkctl instead of buildx;
//   - buildkitd: a fresh root, rootlesskit + buildkitd started (timed
//     apart), buildctl; busybox is pulled from the loopback registry
//     within the cold build;
//   - the same with buildx's remote driver instead of buildctl.
func benchBuild(ctx context.Context, e *env, res *Results) error {
	// The daemon of the other phases would idle beside the builds.
	if err := e.stopDaemon(); err != nil {
		return err
	}
	bk, err := newBuildkitd(e.cfg.buildkit)
	if err != nil {
		return err
	}
	plugins := e.cfg.cliPlugins
	img, err := testimage.Busybox()
	if err != nil {
		return err
	}
	base := e.regAddr + "/library/busybox:latest"
	if err := testimage.Push(ctx, base, img); err != nil {
		return fmt.Errorf("pushing busybox: %w", err)
	}
	dir := filepath.Join(e.dir, "build")
	ctxDir := filepath.Join(dir, "context")
	// The docker CLI finds buildx in a directory of ours
	// (contrib/test/clients.sh); buildctl gets no credentials of the
	// user's either; buildx's remote builders live in their own.
	hutchCfg, ctlCfg, bxCfg := filepath.Join(dir, "docker-config"), filepath.Join(dir, "buildctl-config"), filepath.Join(dir, "buildx-remote-config")
	cliCfg := fmt.Sprintf(`{"cliPluginsExtraDirs":[%q]}`, plugins)
	files := map[string]string{
		filepath.Join(ctxDir, "Dockerfile"):    strings.ReplaceAll(buildDockerfile, "BASE", base),
		filepath.Join(hutchCfg, "config.json"): cliCfg,
		filepath.Join(ctlCfg, "config.json"):   "{}",
		filepath.Join(bxCfg, "config.json"):    cliCfg,
	}
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			return err
		}
	}
	// The same work for all four: buildx asks hutch (which has the
	// features of Docker's containerd image store) and the remote driver
	// for a provenance attestation by default, buildctl and bkctl are
	// asked for the same one. bkctl asks hutch what buildx's docker driver
	// asks: FROM resolved in the engine's store first, the image into it
	// by the moby exporter. The metadata file (buildx's remote driver and
	// buildctl report the image there) is written without the provenance
	// buildx would fetch for it after the build.
	meta := filepath.Join(dir, "metadata.json")
	const provenance = "attest:provenance=mode=min,inline-only=true"
	hutchArgs := []string{"buildx", "build", "--progress=rawjson", "-t", buildTag, ctxDir}
	bkctlArgs := []string{"-opt", "image-resolve-mode=local", "-opt", provenance, "-t", buildTag, ctxDir}
	ctlArgs := func(sock string) []string {
		return []string{"--addr", "unix://" + sock, "build", "--progress=rawjson", "--frontend", "dockerfile.v0",
			"--local", "context=" + ctxDir, "--local", "dockerfile=" + ctxDir,
			"--opt", provenance,
			"--output", "type=image,name=" + buildTag, "--metadata-file", meta}
	}
	bxArgs := []string{"buildx", "build", "--builder", "bench-buildkitd", "--progress=rawjson",
		"--output", "type=image,name=" + buildTag, "--metadata-file", meta, ctxDir}
	b := &res.Build
	b.Dockerfile = strings.ReplaceAll(buildDockerfile, "BASE", "REG/library/busybox:latest")
	show := strings.NewReplacer(ctxDir, "CONTEXT", meta, "META.json").Replace
	b.Commands = []string{
		"buildx → hutch: DOCKER_CONFIG=(cliPluginsExtraDirs: buildx) docker " + show(strings.Join(hutchArgs, " ")),
		"bkctl → hutch: DOCKER_HOST=unix://HUTCH.sock bkctl " + show(strings.Join(bkctlArgs, " ")),
		"buildkitd: " + bk.commandLine(),
		"buildctl: buildctl " + show(strings.Join(ctlArgs("RUNDIR/buildkitd.sock"), " ")),
		"buildx → buildkitd: docker buildx create --name bench-buildkitd --driver remote unix://RUNDIR/buildkitd.sock; BUILDX_METADATA_PROVENANCE=disabled docker " + show(strings.Join(bxArgs, " ")),
	}
	b.Comment = "goal: bkctl → hutch vs buildctl → buildkitd, the same client (BuildKit's Go client making buildctl's calls) on both sides, so that the ratio is the engines'; " +
		"buildx → hutch and buildx → buildkitd (remote driver) for information. " +
		"cold: hutch on a fresh daemon with only busybox in its store (hutch-buildkit's start is part of the build); " +
		"buildkitd on a fresh root, started before the build (its start apart), pulling busybox from the loopback registry within the build. " +
		"cached: the same build again on the same state, every step CACHED, the image tagged in hutch's store / exported to buildkitd's. " +
		"Every build attaches buildx's default provenance attestation (mode=min), buildctl's and bkctl's asked for it."
	reg := e.regAddr
	saved := func(name string, i, k int) string {
		return filepath.Join(dir, fmt.Sprintf("%s-%d-%s.json", name, i, [...]string{"cold", "cached"}[k]))
	}

	// The CLIs' binaries in the page cache before the first sample.
	_, _ = exec.CommandContext(ctx, e.cfg.docker, "--config", hutchCfg, "buildx", "version").CombinedOutput()
	_, _ = exec.CommandContext(ctx, bk.buildctl, "--version").CombinedOutput()
	_, _ = exec.CommandContext(ctx, e.cfg.bkctl, "-h").CombinedOutput()

	hutchSample := func(i int, bkctl bool) error {
		name, side, what := fmt.Sprintf("build-%d", i), &b.Hutch, "hutch"
		if bkctl {
			name, side, what = fmt.Sprintf("build-bkctl-%d", i), &b.BkctlHutch, "bkctl-hutch"
		}
		d, err := e.startDaemon(ctx, name)
		if err != nil {
			return err
		}
		_, err = d.pull(ctx, base)
		// Every process of its tree gone before the next daemon starts on
		// the same runtime directory: an engine exiting late would remove
		// the next one's socket.
		var serr error
		stopTree(d.cmd.Process.Pid, func() error { serr = d.stop(); return nil })
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("pulling busybox into hutch: %w (daemon log %s)", err, d.logPath)
		}
		if d, err = e.startDaemon(ctx, name); err != nil {
			return err
		}
		defer func() {
			stopTree(d.cmd.Process.Pid, d.stop)
			removeAsMapped(filepath.Join(e.runDir, name))
		}()
		if err := sleep(ctx, settle); err != nil {
			return err
		}
		if i == 0 && !bkctl {
			if b.IdleBefore, err = readTree(d.cmd.Process.Pid); err != nil {
				return err
			}
		}
		run := func() ([]byte, error) {
			cmd := exec.CommandContext(ctx, e.cfg.docker, hutchArgs...)
			cmd.Env = append(cleanEnv(), "DOCKER_HOST=unix://"+d.socket, "DOCKER_CONFIG="+hutchCfg)
			if bkctl {
				cmd = exec.CommandContext(ctx, e.cfg.bkctl, bkctlArgs...)
				cmd.Env = append(cleanEnv(), "DOCKER_HOST=unix://"+d.socket, "DOCKER_CONFIG="+ctlCfg)
			}
			return cmd.CombinedOutput()
		}
		result := func() string {
			ins, err := d.api.ImageInspect(ctx, buildTag)
			if err != nil {
				return ""
			}
			return ins.ID
		}
		if err := buildTwice(what, side, run, result, true, reg, func(k int) string { return saved(what, i, k) }); err != nil {
			return fmt.Errorf("%s, %w (daemon log %s, its end:\n%s)", what, err, d.logPath, logTail(d.logPath, 20))
		}
		if i == 0 && !bkctl {
			if err := sleep(ctx, settle); err != nil {
				return err
			}
			b.After, err = readTree(d.cmd.Process.Pid)
		}
		return err
	}
	bkSample := func(i int, buildx bool) error {
		name := fmt.Sprintf("buildkitd-%d", i)
		side, what := &b.Buildkitd, "buildctl"
		if buildx {
			name = fmt.Sprintf("buildkitd-buildx-%d", i)
			side, what = &b.BuildxBuildkitd, "buildx-remote"
		}
		runDir, root := filepath.Join(e.runDir, name), filepath.Join(e.dataDir, name)
		defer removeAsMapped(runDir)
		defer removeAsMapped(root)
		p, err := bk.start(ctx, runDir, root, filepath.Join(e.dir, name+".log"))
		if err != nil {
			return err
		}
		defer stopTree(p.cmd.Process.Pid, p.stop)
		b.BuildkitdStart.add(p.ready)
		if buildx {
			// A builder of that name, on this sample's socket.
			os.RemoveAll(filepath.Join(bxCfg, "buildx"))
			cmd := exec.CommandContext(ctx, e.cfg.docker, "buildx", "create", "--name", "bench-buildkitd", "--driver", "remote", "unix://"+p.socket)
			cmd.Env = append(cleanEnv(), "DOCKER_CONFIG="+bxCfg)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("docker buildx create: %w\n%s", err, out)
			}
		}
		if err := sleep(ctx, settle); err != nil {
			return err
		}
		run := func() ([]byte, error) {
			os.Remove(meta) // each build's own, or none
			cmd := exec.CommandContext(ctx, bk.buildctl, ctlArgs(p.socket)...)
			cmd.Env = append(cleanEnv(), "DOCKER_CONFIG="+ctlCfg)
			if buildx {
				cmd = exec.CommandContext(ctx, e.cfg.docker, bxArgs...)
				cmd.Env = append(cleanEnv(), "DOCKER_CONFIG="+bxCfg, "BUILDX_METADATA_PROVENANCE=disabled")
			}
			return cmd.CombinedOutput()
		}
		result := func() string { return metadataDigest(meta) }
		if err := buildTwice(what, side, run, result, false, reg, func(k int) string { return saved(what, i, k) }); err != nil {
			return fmt.Errorf("buildkitd (%s), %w (log %s)", what, err, p.logPath)
		}
		if i == 0 && !buildx {
			if err := sleep(ctx, settle); err != nil {
				return err
			}
			b.BuildkitdAfter, err = readTree(p.cmd.Process.Pid)
		}
		return err
	}
	for i := range e.cfg.buildRuns {
		steps := []func() error{
			func() error { return hutchSample(i, false) },
			func() error { return hutchSample(i, true) },
			func() error { return bkSample(i, false) },
			func() error { return bkSample(i, true) },
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		progress("   sample %d (cold, cached ms): bkctl → hutch %.0f, %.0f; buildctl → buildkitd %.0f, %.0f; buildx → hutch %.0f, %.0f; buildx → buildkitd %.0f, %.0f", i+1,
			lastSample(b.BkctlHutch.Cold.Wall), lastSample(b.BkctlHutch.Cached.Wall),
			lastSample(b.Buildkitd.Cold.Wall), lastSample(b.Buildkitd.Cached.Wall),
			lastSample(b.Hutch.Cold.Wall), lastSample(b.Hutch.Cached.Wall),
			lastSample(b.BuildxBuildkitd.Cold.Wall), lastSample(b.BuildxBuildkitd.Cached.Wall))
	}
	for _, s := range b.series() {
		s.StepMedians = s.stepMedians()
	}
	return nil
}

// checkBuild says what the build phase lacks, before any phase runs.
func (c *config) checkBuild() error {
	if _, err := newBuildkitd(c.buildkit); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(c.cliPlugins, "docker-buildx")); err != nil {
		return fmt.Errorf("the buildx plugin: %w (bash contrib/test/clients.sh as root builds it)", err)
	}
	if c.bkctl == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.bkctl = filepath.Join(filepath.Dir(exe), "bkctl")
	}
	if _, err := os.Stat(c.bkctl); err != nil {
		return fmt.Errorf("the build phase's client: %w (go build -o BENCHDIR/bkctl ./contrib/bench/bkctl, or -bkctl)", err)
	}
	return nil
}

// series are every BuildSeries of b.
func (b *Build) series() []*BuildSeries {
	return []*BuildSeries{&b.Hutch.Cold, &b.Hutch.Cached, &b.BkctlHutch.Cold, &b.BkctlHutch.Cached,
		&b.Buildkitd.Cold, &b.Buildkitd.Cached, &b.BuildxBuildkitd.Cold, &b.BuildxBuildkitd.Cached}
}

// buildTwice runs a cold build, then the cached rebuild, on one state:
// the first must build every RUN and COPY step, the second find each
// cached. result names the image each made ("" when there is none),
// the same for both when same (an image id; not a digest of a manifest
// list with a provenance attestation, whose times differ); save names
// the file its progress is kept in.
func buildTwice(what string, side *BuildSide, run func() ([]byte, error), result func() string, same bool, reg string, save func(k int) string) error {
	var ids [2]string
	for k, s := range []*BuildSeries{&side.Cold, &side.Cached} {
		kind := [...]string{"cold build", "cached rebuild"}[k]
		if k == 0 {
			unix.Sync()
		}
		out, err := timeBuild(s, run, k == 1, reg)
		_ = os.WriteFile(save(k), out, 0o600)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		if ids[k] = result(); ids[k] == "" {
			return fmt.Errorf("%s: no image named %s came out", kind, buildTag)
		}
	}
	if same && ids[0] != ids[1] {
		progress("   %s: the cached rebuild gave %s, the cold build %s", what, ids[1], ids[0])
	}
	return nil
}

// logTail is the last n lines of a log, which the scratch directory's
// removal (run.sh) would take along.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(b, n)
}

func lastSample(d Dist) float64 {
	if len(d.Samples) == 0 {
		return 0
	}
	return d.Samples[len(d.Samples)-1]
}

// print writes the build figure's lines below the table.
func (b *Build) print(w io.Writer) {
	if b.Hutch.Cold.Wall.N == 0 && b.BkctlHutch.Cold.Wall.N == 0 {
		return
	}
	fmt.Fprintf(w, "build (3 stages; ms, median): the goal, bkctl → hutch ÷ buildctl → buildkitd (the same client on both sides), by sample: cold %v, cached %v\n",
		b.ColdPairRatios, b.CachedPairRatios)
	fmt.Fprintf(w, "  buildx, for information: → hutch ÷ (remote driver) → buildkitd cold %.0f vs %.0f (%.2f×), cached %.0f vs %.0f (%.2f×); → hutch ÷ buildctl → buildkitd cold %.2f×, cached %.2f×\n",
		b.Hutch.Cold.Wall.Median, b.BuildxBuildkitd.Cold.Wall.Median, b.SameClientColdRatio,
		b.Hutch.Cached.Wall.Median, b.BuildxBuildkitd.Cached.Wall.Median, b.SameClientCachedRatio,
		b.BuildxColdRatio, b.BuildxCachedRatio)
	for _, s := range []struct {
		name string
		s    *BuildSeries
	}{
		{"bkctl→hutch cold", &b.BkctlHutch.Cold}, {"buildctl→bkd cold", &b.Buildkitd.Cold},
		{"buildx→hutch cold", &b.Hutch.Cold}, {"buildx→bkd cold", &b.BuildxBuildkitd.Cold},
		{"bkctl→hutch cached", &b.BkctlHutch.Cached}, {"buildctl→bkd cached", &b.Buildkitd.Cached},
		{"buildx→hutch cached", &b.Hutch.Cached}, {"buildx→bkd cached", &b.BuildxBuildkitd.Cached},
	} {
		if s.s.Wall.N == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-19s client start → first step %.0f, steps %.0f, last step → client exit %.0f; slowest steps:",
			s.name, s.s.ToFirst.Median, s.s.Steps.Median, s.s.AfterLast.Median)
		top := slices.Clone(s.s.StepMedians)
		slices.SortStableFunc(top, func(a, c PhaseTime) int { return cmp.Compare(c.Median, a.Median) })
		for _, p := range top[:min(3, len(top))] {
			fmt.Fprintf(w, " %s %.0f;", shorten(p.Name, 40), p.Median)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "  (buildctl and buildx shift the daemon's step times onto their own clock, the first step's start to when they began the solve: "+
		"their \"client start → first step\" is their own start-up, the engine's wait before the first step counts in \"last step → client exit\"; "+
		"bkctl writes the daemon's times as they are)")
	if b.IdleBefore.TreeRSS > 0 {
		fmt.Fprintf(w, "  memory (MiB, RSS/PSS): engine tree idle before the first build %.1f/%.1f", mib(b.IdleBefore.TreeRSS), mib(b.IdleBefore.TreePSS))
		for _, p := range b.IdleBefore.Procs {
			fmt.Fprintf(w, " [%s %.1f]", p.Name, mib(p.RSS))
		}
		fmt.Fprintf(w, "; after the builds %.1f/%.1f", mib(b.After.TreeRSS), mib(b.After.TreePSS))
		for _, p := range b.After.Procs {
			if p.Name == "hutch-buildkit" {
				fmt.Fprintf(w, " (hutch-buildkit %.1f/%.1f)", mib(p.RSS), mib(p.PSS))
			}
		}
		fmt.Fprintf(w, "; buildkitd's tree after its builds %.1f/%.1f\n", mib(b.BuildkitdAfter.TreeRSS), mib(b.BuildkitdAfter.TreePSS))
	}
	for _, c := range b.Commands {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

// shorten cuts s to n characters, with an ellipsis.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// derive summarizes the samples and computes the ratios.
func (b *Build) derive() {
	for _, s := range b.series() {
		for _, d := range []*Dist{&s.Wall, &s.ToFirst, &s.Steps, &s.AfterLast} {
			d.summarize()
		}
	}
	b.BuildkitdStart.summarize()
	b.ColdRatio = ratio(b.BkctlHutch.Cold.Wall.Median, b.Buildkitd.Cold.Wall.Median)
	b.CachedRatio = ratio(b.BkctlHutch.Cached.Wall.Median, b.Buildkitd.Cached.Wall.Median)
	b.ColdPairRatios = pairRatios(b.BkctlHutch.Cold.Wall.Samples, b.Buildkitd.Cold.Wall.Samples)
	b.CachedPairRatios = pairRatios(b.BkctlHutch.Cached.Wall.Samples, b.Buildkitd.Cached.Wall.Samples)
	b.BuildxColdRatio = ratio(b.Hutch.Cold.Wall.Median, b.Buildkitd.Cold.Wall.Median)
	b.BuildxCachedRatio = ratio(b.Hutch.Cached.Wall.Median, b.Buildkitd.Cached.Wall.Median)
	b.SameClientColdRatio = ratio(b.Hutch.Cold.Wall.Median, b.BuildxBuildkitd.Cold.Wall.Median)
	b.SameClientCachedRatio = ratio(b.Hutch.Cached.Wall.Median, b.BuildxBuildkitd.Cached.Wall.Median)
}
