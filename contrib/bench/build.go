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
// fully cached by hutch (docker buildx build, the docker driver: POST
// /grpc and /session to hutch-buildkit) and by BuildKit's own rootless
// buildkitd of the same version with buildctl, each cold build on a fresh
// state. The same builds by buildx's remote driver to that buildkitd
// take the client out of the comparison: buildx's start alone is some
// 100 ms, buildctl's 10.
type Build struct {
	Dockerfile string    `json:"dockerfile"`
	Hutch      BuildSide `json:"hutch"`
	Buildkitd  BuildSide `json:"buildkitd"`
	// BuildxBuildkitd is buildx's remote driver to a buildkitd.
	BuildxBuildkitd BuildSide `json:"buildx_remote_buildkitd"`
	// BuildkitdStart is rootlesskit's start until buildkitd's socket
	// answers; it is no part of buildkitd's builds, while hutch-buildkit's
	// start is part of hutch's cold build.
	BuildkitdStart Dist `json:"buildkitd_start"`
	// Ratios are hutch's median over buildkitd's (buildctl), the figures;
	// pair ratios are one per sample, hutch's over the run beside it; the
	// same-client ratios are hutch's median over buildx → buildkitd's.
	ColdRatio             float64   `json:"cold_median_ratio"`
	CachedRatio           float64   `json:"cached_median_ratio"`
	ColdPairRatios        []float64 `json:"cold_pair_ratios"`
	CachedPairRatios      []float64 `json:"cached_pair_ratios"`
	SameClientColdRatio   float64   `json:"same_client_cold_median_ratio"`
	SameClientCachedRatio float64   `json:"same_client_cached_median_ratio"`
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
// cached, three ways, in an order that alternates:
//   - hutch: a fresh daemon with busybox pulled into it and started again
//     (outside the timing; the memory phase reads the idle tree so), the
//     docker CLI with buildx;
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
	// The same work for all three: buildx asks hutch (which has the
	// features of Docker's containerd image store) and the remote driver
	// for a provenance attestation by default, buildctl is asked for the
	// same one. The metadata file (buildx's remote driver and buildctl
	// report the image there) is written without the provenance buildx
	// would fetch for it after the build.
	meta := filepath.Join(dir, "metadata.json")
	hutchArgs := []string{"buildx", "build", "--progress=rawjson", "-t", buildTag, ctxDir}
	ctlArgs := func(sock string) []string {
		return []string{"--addr", "unix://" + sock, "build", "--progress=rawjson", "--frontend", "dockerfile.v0",
			"--local", "context=" + ctxDir, "--local", "dockerfile=" + ctxDir,
			"--opt", "attest:provenance=mode=min,inline-only=true",
			"--output", "type=image,name=" + buildTag, "--metadata-file", meta}
	}
	bxArgs := []string{"buildx", "build", "--builder", "bench-buildkitd", "--progress=rawjson",
		"--output", "type=image,name=" + buildTag, "--metadata-file", meta, ctxDir}
	b := &res.Build
	b.Dockerfile = strings.ReplaceAll(buildDockerfile, "BASE", "REG/library/busybox:latest")
	show := strings.NewReplacer(ctxDir, "CONTEXT", meta, "META.json").Replace
	b.Commands = []string{
		"hutch: DOCKER_CONFIG=(cliPluginsExtraDirs: buildx) docker " + show(strings.Join(hutchArgs, " ")),
		"buildkitd: " + bk.commandLine(),
		"buildctl: buildctl " + show(strings.Join(ctlArgs("RUNDIR/buildkitd.sock"), " ")),
		"buildx → buildkitd: docker buildx create --name bench-buildkitd --driver remote unix://RUNDIR/buildkitd.sock; BUILDX_METADATA_PROVENANCE=disabled docker " + show(strings.Join(bxArgs, " ")),
	}
	b.Comment = "cold: hutch on a fresh daemon with only busybox in its store (hutch-buildkit's start is part of the build); " +
		"buildkitd on a fresh root, started before the build (its start apart), pulling busybox from the loopback registry within the build. " +
		"cached: the same build again on the same state, every step CACHED, the image tagged in hutch's store / exported to buildkitd's. " +
		"Every build attaches buildx's default provenance attestation (mode=min), buildctl's asked for it."
	reg := e.regAddr
	saved := func(name string, i, k int) string {
		return filepath.Join(dir, fmt.Sprintf("%s-%d-%s.json", name, i, [...]string{"cold", "cached"}[k]))
	}

	// The CLIs' binaries in the page cache before the first sample.
	_, _ = exec.CommandContext(ctx, e.cfg.docker, "--config", hutchCfg, "buildx", "version").CombinedOutput()
	_, _ = exec.CommandContext(ctx, bk.buildctl, "--version").CombinedOutput()

	hutchSample := func(i int) error {
		name := fmt.Sprintf("build-%d", i)
		d, err := e.startDaemon(ctx, name)
		if err != nil {
			return err
		}
		_, err = d.pull(ctx, base)
		if serr := d.stop(); err == nil && serr != nil {
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
		if i == 0 {
			if b.IdleBefore, err = readTree(d.cmd.Process.Pid); err != nil {
				return err
			}
		}
		run := func() ([]byte, error) {
			cmd := exec.CommandContext(ctx, e.cfg.docker, hutchArgs...)
			cmd.Env = append(cleanEnv(), "DOCKER_HOST=unix://"+d.socket, "DOCKER_CONFIG="+hutchCfg)
			return cmd.CombinedOutput()
		}
		result := func() string {
			ins, err := d.api.ImageInspect(ctx, buildTag)
			if err != nil {
				return ""
			}
			return ins.ID
		}
		if err := buildTwice("hutch", &b.Hutch, run, result, true, reg, func(k int) string { return saved("hutch", i, k) }); err != nil {
			return fmt.Errorf("hutch, %w (daemon log %s)", err, d.logPath)
		}
		if i == 0 {
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
			func() error { return hutchSample(i) },
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
		progress("   sample %d: hutch cold %.0f ms, cached %.0f ms; buildctl → buildkitd %.0f, %.0f; buildx → buildkitd %.0f, %.0f", i+1,
			lastSample(b.Hutch.Cold.Wall), lastSample(b.Hutch.Cached.Wall), lastSample(b.Buildkitd.Cold.Wall),
			lastSample(b.Buildkitd.Cached.Wall), lastSample(b.BuildxBuildkitd.Cold.Wall), lastSample(b.BuildxBuildkitd.Cached.Wall))
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
	return nil
}

// series are every BuildSeries of b.
func (b *Build) series() []*BuildSeries {
	return []*BuildSeries{&b.Hutch.Cold, &b.Hutch.Cached, &b.Buildkitd.Cold, &b.Buildkitd.Cached,
		&b.BuildxBuildkitd.Cold, &b.BuildxBuildkitd.Cached}
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

func lastSample(d Dist) float64 {
	if len(d.Samples) == 0 {
		return 0
	}
	return d.Samples[len(d.Samples)-1]
}

// print writes the build figure's lines below the table.
func (b *Build) print(w io.Writer) {
	if b.Hutch.Cold.Wall.N == 0 {
		return
	}
	fmt.Fprintf(w, "build (3 stages; ms, median): hutch ÷ buildctl → buildkitd by pair, cold %v, cached %v; ", b.ColdPairRatios, b.CachedPairRatios)
	fmt.Fprintf(w, "with buildx as the client of both (remote driver to buildkitd) cold %.0f vs %.0f (%.2f×), cached %.0f vs %.0f (%.2f×)\n",
		b.Hutch.Cold.Wall.Median, b.BuildxBuildkitd.Cold.Wall.Median, b.SameClientColdRatio,
		b.Hutch.Cached.Wall.Median, b.BuildxBuildkitd.Cached.Wall.Median, b.SameClientCachedRatio)
	for _, s := range []struct {
		name string
		s    *BuildSeries
	}{
		{"hutch cold", &b.Hutch.Cold}, {"buildctl cold", &b.Buildkitd.Cold}, {"buildx→bkd cold", &b.BuildxBuildkitd.Cold},
		{"hutch cached", &b.Hutch.Cached}, {"buildctl cached", &b.Buildkitd.Cached}, {"buildx→bkd cached", &b.BuildxBuildkitd.Cached},
	} {
		if s.s.Wall.N == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-17s client start → first step %.0f, steps %.0f, last step → client exit %.0f; slowest steps:",
			s.name, s.s.ToFirst.Median, s.s.Steps.Median, s.s.AfterLast.Median)
		top := slices.Clone(s.s.StepMedians)
		slices.SortStableFunc(top, func(a, c PhaseTime) int { return cmp.Compare(c.Median, a.Median) })
		for _, p := range top[:min(3, len(top))] {
			fmt.Fprintf(w, " %s %.0f;", shorten(p.Name, 40), p.Median)
		}
		fmt.Fprintln(w)
	}
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
	b.ColdRatio = ratio(b.Hutch.Cold.Wall.Median, b.Buildkitd.Cold.Wall.Median)
	b.CachedRatio = ratio(b.Hutch.Cached.Wall.Median, b.Buildkitd.Cached.Wall.Median)
	b.ColdPairRatios = pairRatios(b.Hutch.Cold.Wall.Samples, b.Buildkitd.Cold.Wall.Samples)
	b.CachedPairRatios = pairRatios(b.Hutch.Cached.Wall.Samples, b.Buildkitd.Cached.Wall.Samples)
	b.SameClientColdRatio = ratio(b.Hutch.Cold.Wall.Median, b.BuildxBuildkitd.Cold.Wall.Median)
	b.SameClientCachedRatio = ratio(b.Hutch.Cached.Wall.Median, b.BuildxBuildkitd.Cached.Wall.Median)
}
