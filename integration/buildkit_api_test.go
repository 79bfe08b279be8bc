//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	buildtypes "github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// BuildKit through Docker's API rather than buildx: POST /build with
// version=2 (the Go SDK's BuilderBuildKit), the build cache in
// /system/df and POST /build/prune, and what a build leaves behind when
// its client goes away or the daemon is killed.

// contextTar is a build context archive of files.
func contextTar(t *testing.T, files map[string]string) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	tw.Close()
	return &buf
}

func TestBuildKitAPI(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	ctx := context.Background()
	v := "42"
	res, err := api.ImageBuild(ctx, contextTar(t, map[string]string{
		"sub/Dockerfile": "FROM " + ref + "\nARG V\nCOPY hello.txt /hello.txt\nRUN test \"$V\" = 42 && echo ran > /ran\n",
		"hello.txt":      "hello",
	}), client.ImageBuildOptions{
		Version: buildtypes.BuilderBuildKit, Tags: []string{"bkapi:1"}, Dockerfile: "sub/Dockerfile",
		BuildArgs: map[string]*string{"V": &v}, Labels: map[string]string{"made-by": "sdk"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// Docker's stream of a BuildKit build: BuildKit's status as aux
	// messages (moby.buildkit.trace), then the image's ID.
	var traces int
	var id, errMsg string
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			ID    string          `json:"id"`
			Aux   json.RawMessage `json:"aux"`
			Error string          `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch m.ID {
		case "moby.buildkit.trace":
			traces++
		case "moby.image.id":
			var r struct{ ID string }
			json.Unmarshal(m.Aux, &r)
			id = r.ID
		}
		if m.Error != "" {
			errMsg = m.Error
		}
	}
	if errMsg != "" || traces == 0 || id == "" {
		t.Fatalf("build stream: error %q, %d traces, image %q\n--- daemon log ---\n%s", errMsg, traces, id, d.Log())
	}
	insp, err := api.ImageInspect(ctx, "bkapi:1")
	if err != nil {
		t.Fatal(err)
	}
	if insp.ID != id || insp.Config.Labels["made-by"] != "sdk" {
		t.Errorf("image %s labels %v, stream's ID %q", insp.ID, insp.Config.Labels, id)
	}
	if out, err := d.Docker(t, "run", "--rm", "bkapi:1", "cat", "/hello.txt", "/ran"); err != nil || out != "helloran\n" {
		t.Errorf("docker run bkapi:1: %v %q", err, out)
	}

	// Bad options are Docker's 400s, before any build.
	for q, want := range map[string]string{
		"buildargs=notjson":   "invalid buildargs",
		"networkmode=bridge":  `network mode \"bridge\" not supported by buildkit`,
		"extrahosts=nocolon":  "invalid host nocolon",
		"platform=not%2F%2Fa": "",
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://hutch/build?version=2&"+q, strings.NewReader(""))
		resp, err := unixHTTPClient(d.Socket).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("POST /build?version=2&%s = %d %s, want 400 with %q", q, resp.StatusCode, b, want)
		}
	}
}

// The build cache is BuildKit's in /system/df, and POST /build/prune
// empties it; a daemon that never built does not start BuildKit for them.
func TestBuildKitCacheDiskUsage(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	ctx := context.Background()
	du, err := api.DiskUsage(ctx, client.DiskUsageOptions{BuildCache: true})
	if err != nil || du.BuildCache.TotalCount != 0 {
		t.Fatalf("disk usage before any build: %+v %v", du.BuildCache, err)
	}
	if _, err := api.BuildCachePrune(ctx, client.BuildCachePruneOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if processRunning(t, d, "hutch-buildkit") {
		t.Fatal("hutch-buildkit started without a build")
	}
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo cached > /c\n"})
	bk(t, d, "build", "-t", "bkdu", dir)
	if !processRunning(t, d, "hutch-buildkit") {
		t.Fatal("no hutch-buildkit after a build")
	}
	du, err = api.DiskUsage(ctx, client.DiskUsageOptions{BuildCache: true, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if du.BuildCache.TotalCount == 0 || du.BuildCache.TotalSize <= 0 || len(du.BuildCache.Items) == 0 {
		t.Errorf("build cache after a build: %+v", du.BuildCache)
	}
	if out, err := d.Docker(t, "system", "df"); err != nil || !strings.Contains(out, "Build Cache") {
		t.Errorf("docker system df: %v\n%s", err, out)
	}
	rep, err := api.BuildCachePrune(ctx, client.BuildCachePruneOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Report.CachesDeleted) == 0 || rep.Report.SpaceReclaimed == 0 {
		t.Errorf("prune report: %+v", rep.Report)
	}
	du, err = api.DiskUsage(ctx, client.DiskUsageOptions{BuildCache: true})
	if err != nil || du.BuildCache.TotalCount != 0 {
		t.Errorf("build cache after prune: %+v %v", du.BuildCache, err)
	}
	// A bad filter is a 400 and prunes nothing.
	code, _, body := d.rawRequest(t, http.MethodPost, "/build/prune?filters="+url.QueryEscape(`{"nope":{"x":true}}`), "")
	if code != http.StatusBadRequest || !strings.Contains(body, `invalid filter \"nope\"`) {
		t.Errorf("prune with a bad filter = %d %s", code, body)
	}
	// The image stays: the cache is not the image store.
	if out, err := d.Docker(t, "run", "--rm", "bkdu", "cat", "/c"); err != nil || out != "cached\n" {
		t.Errorf("docker run bkdu after prune: %v %q", err, out)
	}
}

// buildingSleep starts a build whose RUN sleeps (sleep marker) and
// returns once that process runs, with the CLI's command.
func buildingSleep(t *testing.T, d *daemon, ref, marker string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN sleep " + marker + "\n"})
	cfg := buildxConfig(t)
	cmd := exec.Command(dockerCLI(t), "build", "--progress=plain", dir)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+cfg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for sleepPid(t, d, marker) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the build's RUN never ran:\n%s\n--- daemon log ---\n%s", out.String(), d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cmd, &out
}

// sleepPid is the pid of the daemon's descendant "sleep marker", or 0.
func sleepPid(t *testing.T, d *daemon, marker string) int {
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) == 2 && args[0] == "sleep" && args[1] == marker {
			return p
		}
	}
	return 0
}

// buildkitMounts lists the mounts under BuildKit's state that the
// process of pid sees.
func buildkitMounts(pid int, root string) []string {
	b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "mountinfo"))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, root) {
			out = append(out, l)
		}
	}
	return out
}

// A client that goes away mid-build cancels it: the RUN's process ends
// and its mounts go.
func TestBuildKitClientGone(t *testing.T) {
	d, ref := pulled(t)
	cmd, out := buildingSleep(t, d, ref, "4321")
	cmd.Process.Kill()
	cmd.Wait()
	var engine int
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) > 1 && args[1] == "daemon" {
			engine = p
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pid, mounts := sleepPid(t, d, "4321"), buildkitMounts(engine, "/buildkit/")
		if pid == 0 && len(mounts) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the client left: sleep pid %d, mounts %q\n%s\n--- daemon log ---\n%s", pid, mounts, out, d.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill -9 of the daemon mid-build takes BuildKit and the build's process
// with it; the next daemon builds again on the same state.
func TestBuildKitKill9(t *testing.T) {
	d, ref := pulled(t)
	buildingSleep(t, d, ref, "4322")
	tree := descendants(t, d.cmd.Process.Pid)
	killDaemons(t, d)
	waitGone(t, tree)
	for _, p := range tree {
		if syscall.Kill(p, 0) == nil && !strings.Contains(strings.Join(cmdline(p), " "), "hutch-shim") {
			t.Errorf("pid %d (%v) outlived the killed daemon", p, cmdline(p))
		}
	}
	d2 := startDaemonEnv(t, d.env, d.Socket)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo again > /again\n"})
	bk(t, d2, "build", "-t", "bkagain", dir)
	if out, err := d2.Docker(t, "run", "--rm", "bkagain", "cat", "/again"); err != nil || out != "again\n" {
		t.Errorf("docker run bkagain: %v %q\n--- daemon log ---\n%s", err, out, d2.Log())
	}
}

// buildx's tty progress in a person's terminal (tmux): the build's
// summary line and the export's steps, as against Docker.
func TestBuildKitTTYProgress(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo tty > /tty\n"})
	cfg := buildxConfig(t)
	sock := t.TempDir() + "/tmux.sock"
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	shell := "env DOCKER_HOST=" + d.Host() + " DOCKER_CONFIG=" + cfg + " sh -c '" + dockerCLI(t) + " build -t bktty " + dir + "; echo exit-$?; sleep 60'"
	tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "bk", shell)
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	deadline := time.Now().Add(2 * time.Minute)
	var screen string
	for {
		screen = tmux("capture-pane", "-p", "-t", "bk")
		if strings.Contains(screen, "exit-") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"exit-0", "[+] Building", "FINISHED", "RUN echo tty > /tty", "naming to docker.io/library/bktty:latest"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal never showed %q:\n%s", want, screen)
		}
	}
}
