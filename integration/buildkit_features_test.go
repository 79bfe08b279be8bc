//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BuildKit's features beyond a plain build, each checked by its effect:
// COPY/ADD options, ADD of URLs and git repositories, SSH forwarding,
// the oci and docker exporters, pushes and pulls with the client's
// credentials, cache export and import, du/prune and parallel stages.
// buildkit_features_registry_test.go has the tests that need a registry.

// buildkitLog is what hutch-buildkit logged: <state dir>/buildkit/buildkit.log,
// the state dir being $XDG_RUNTIME_DIR/hutch.
func buildkitLog(d *daemon) string {
	b, err := os.ReadFile(filepath.Join(d.Runtime, "hutch", "buildkit", "buildkit.log"))
	if err != nil {
		return fmt.Sprintf("(no buildkit.log: %v)", err)
	}
	return tail(string(b), 60)
}

// logsOfBuild is the daemon's and hutch-buildkit's logs, for failures.
func logsOfBuild(d *daemon) string {
	return "--- daemon log ---\n" + tail(d.Log(), 60) + "\n--- buildkit.log ---\n" + buildkitLog(d)
}

// buildxConfig makes a DOCKER_CONFIG naming the pinned plugins, to last
// across calls (docker login, then builds).
func buildxConfig(t testing.TB) string {
	t.Helper()
	cfg := t.TempDir()
	js, err := json.Marshal(map[string][]string{"cliPluginsExtraDirs": {cliPlugins(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), js, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// buildxIn runs the real docker CLI against d with cfg as DOCKER_CONFIG
// (buildxConfig: the pinned buildx and compose plugins), env added to the
// environment and none of the user's settings of the CLI, buildx or
// compose, stdin as input; builds get 5 minutes.
func (d *daemon) buildxIn(t testing.TB, cfg string, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := d.buildxCmd(t, cfg, args...)
	// Killed after 5 minutes (the command is started by then).
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed after 5 minutes)", err)
	}
	return string(out), err
}

// buildxCmd is the docker CLI command buildxIn runs, not started: for
// commands that run in the background (compose watch, compose events).
func (d *daemon) buildxCmd(t testing.TB, cfg string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(dockerCLI(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_") && !strings.HasPrefix(kv, "BUILDX_") &&
			!strings.HasPrefix(kv, "BUILDKIT_") && !strings.HasPrefix(kv, "COMPOSE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+cfg)
	cmd.Dir = t.TempDir()
	return cmd
}

// bkIn is buildxIn that fails the test on error, with both logs.
func bkIn(t *testing.T, d *daemon, cfg string, env []string, args ...string) string {
	t.Helper()
	out, err := d.buildxIn(t, cfg, env, "", args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s\n%s", strings.Join(args, " "), err, out, logsOfBuild(d))
	}
	return strings.TrimSpace(out)
}

// bkRun is docker run --rm ref sh -c script.
func bkRun(t *testing.T, d *daemon, ref, script string) string {
	t.Helper()
	return bkIn(t, d, buildxConfig(t), nil, "run", "--rm", ref, "sh", "-c", script)
}

// TestBuildKitCopyOptions: COPY --link, --parents and --exclude, and
// ADD --chmod of a context file.
func TestBuildKitCopyOptions(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"Dockerfile": "FROM " + ref + `
COPY --link link.txt /linked/
COPY --parents a/b/f.txt c/g.txt /dst/
COPY --exclude=*.log logs/ /logs/
ADD --chmod=0751 run.sh /usr/local/bin/run.sh
`,
		"link.txt":     "linked\n",
		"a/b/f.txt":    "f\n",
		"a/b/other":    "not copied\n",
		"c/g.txt":      "g\n",
		"logs/a.txt":   "a\n",
		"logs/b.log":   "b\n",
		"logs/keep.md": "keep\n",
		"run.sh":       "#!/bin/sh\necho ran\n",
	})
	cfg := buildxConfig(t)
	out := bkIn(t, d, cfg, nil, "build", "--progress=plain", "-t", "bkcopy", dir)
	got := bkRun(t, d, "bkcopy", "cat /linked/link.txt; cd /dst && find . | sort; cd /logs && find . -type f | sort; stat -c %a /usr/local/bin/run.sh; run.sh")
	want := "linked\n.\n./a\n./a/b\n./a/b/f.txt\n./c\n./c/g.txt\n./a.txt\n./keep.md\n751\nran"
	if got != want {
		t.Errorf("the files of bkcopy:\n%s\nwant:\n%s\n--- build ---\n%s", got, want, out)
	}
}

// TestBuildKitAddURL: ADD of a URL served on the host's loopback, with
// the right checksum (and --chmod), and with a wrong one, which fails
// with BuildKit's digest mismatch.
func TestBuildKitAddURL(t *testing.T) {
	d, ref := pulled(t)
	body := fmt.Sprintf("fetched over http %d\n", time.Now().UnixNano())
	sum := sha256.Sum256([]byte(body))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/f.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/f.txt"
	cfg := buildxConfig(t)

	good := buildDir(t, map[string]string{"Dockerfile": fmt.Sprintf("FROM %s\nADD --checksum=sha256:%s --chmod=0640 %s /fetched.txt\n", ref, hex.EncodeToString(sum[:]), url)})
	out := bkIn(t, d, cfg, nil, "build", "--progress=plain", "-t", "bkurl", good)
	if got := bkRun(t, d, "bkurl", "cat /fetched.txt; stat -c %a /fetched.txt"); got != strings.TrimSpace(body)+"\n640" {
		t.Errorf("ADD %s: /fetched.txt and its mode: %q\n%s", url, got, out)
	}

	wrong := sha256.Sum256([]byte("something else"))
	bad := buildDir(t, map[string]string{"Dockerfile": fmt.Sprintf("FROM %s\nADD --checksum=sha256:%s %s /fetched.txt\n", ref, hex.EncodeToString(wrong[:]), url)})
	out, err := d.buildxIn(t, cfg, nil, "", "build", "--progress=plain", "-t", "bkurlbad", bad)
	// BuildKit's http source: "digest mismatch <got>: <expected>".
	if err == nil || !strings.Contains(out, "digest mismatch") || !strings.Contains(out, hex.EncodeToString(wrong[:])) || !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Errorf("ADD with a wrong checksum: %v, want BuildKit's digest mismatch:\n%s\n%s", err, out, logsOfBuild(d))
	}
	if out, err := d.Docker(t, "image", "inspect", "bkurlbad"); err == nil {
		t.Errorf("the failed build tagged bkurlbad:\n%s", out)
	}
}

// gitDaemon makes a git repository of files (one commit on main) and
// serves it with git daemon on loopback; it returns the repository's
// git:// URL.
func gitDaemon(t *testing.T, files map[string]string) string {
	t.Helper()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	work, base := buildDir(t, files), t.TempDir()
	git(work, "init", "-q")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "context")
	git(base, "clone", "-q", "--bare", work, "repo.git")
	port := freeLoopbackPort(t)
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--base-path="+base, "--export-all", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	// git runs git-daemon as its child: both go, as a process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("git daemon: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not listen on %s:\n%s", addr, log.String())
		}
	}
	return "git://" + addr + "/repo.git"
}

// TestBuildKitAddGit: ADD of a git repository served on loopback by git
// daemon, at a branch.
func TestBuildKitAddGit(t *testing.T) {
	d, ref := pulled(t)
	repo := gitDaemon(t, map[string]string{"hello.txt": "from git\n", "sub/deep.txt": "deep\n"})
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nADD " + repo + "#main /src\n"})
	out := bkIn(t, d, buildxConfig(t), nil, "build", "--progress=plain", "-t", "bkgit", dir)
	if got := bkRun(t, d, "bkgit", "cat /src/hello.txt /src/sub/deep.txt; test -e /src/.git && echo has .git; true"); got != "from git\ndeep" {
		t.Errorf("ADD %s#main /src: %q\n%s", repo, got, out)
	}
}

// TestBuildKitSSH: --ssh default forwards the agent of SSH_AUTH_SOCK to
// RUN --mount=type=ssh; without --ssh there is no socket, and a required
// mount fails.
func TestBuildKitSSH(t *testing.T) {
	agent, err := exec.LookPath("ssh-agent")
	if err != nil {
		t.Fatalf("ssh-agent is not installed: add the Debian package openssh-client to PKGS in contrib/test/setup-root.sh (%v)", err)
	}
	d, ref := pulled(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(agent, "-D", "-a", sock)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent made no socket %s:\n%s", sock, log.String())
		}
	}
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + `
RUN --mount=type=ssh test -S "$SSH_AUTH_SOCK" && echo "$SSH_AUTH_SOCK" > /sshsock
`})
	cfg := buildxConfig(t)
	env := []string{"SSH_AUTH_SOCK=" + sock}
	out := bkIn(t, d, cfg, env, "build", "--progress=plain", "--ssh", "default", "-t", "bkssh", dir)
	if got := bkRun(t, d, "bkssh", "cat /sshsock"); got != "/run/buildkit/ssh_agent.0" {
		t.Errorf("RUN --mount=type=ssh saw SSH_AUTH_SOCK %q\n%s", got, out)
	}
	out, err = d.buildxIn(t, cfg, env, "", "build", "--progress=plain", "--no-cache", "-t", "bkssh2", dir)
	if err == nil || !strings.Contains(out, "exit code: 1") {
		t.Errorf("RUN --mount=type=ssh without --ssh found a socket: %v\n%s", err, out)
	}
	required := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN --mount=type=ssh,required=true true\n"})
	out, err = d.buildxIn(t, cfg, env, "", "build", "--progress=plain", "-t", "bkssh3", required)
	// buildx answers for the session's SSH agents: it has none called default.
	if err == nil || !strings.Contains(out, "unset ssh forward key default") {
		t.Errorf("RUN --mount=type=ssh,required=true without --ssh: %v\n%s", err, out)
	}
}

// TestBuildKitOCIDockerOutputs: --output type=oci and type=docker write
// archives holding the image's index or manifest.json and every blob;
// docker load takes the docker one, which then runs.
func TestBuildKitOCIDockerOutputs(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo archived > /o\nCMD [\"cat\", \"/o\"]\n"})
	cfg, tmp := buildxConfig(t), t.TempDir()
	readTar := func(p string) map[string]string {
		t.Helper()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, entries := untar(t, f)
		return entries
	}

	ociTar := filepath.Join(tmp, "x.tar")
	out := bkIn(t, d, cfg, nil, "buildx", "build", "--progress=plain", "--output", "type=oci,dest="+ociTar, dir)
	oci := readTar(ociTar)
	var index struct {
		Manifests []struct{ MediaType, Digest string }
	}
	if err := json.Unmarshal([]byte(oci["index.json"]), &index); err != nil || len(index.Manifests) == 0 || oci["oci-layout"] == "" {
		t.Fatalf("type=oci: index.json %q (%v), oci-layout %q; entries %v\n%s", oci["index.json"], err, oci["oci-layout"], keys(oci), out)
	}
	blob := func(entries map[string]string, dgst string) string {
		b, ok := entries["blobs/sha256/"+strings.TrimPrefix(dgst, "sha256:")]
		if !ok {
			t.Errorf("the archive lacks the blob %s: %v", dgst, keys(entries))
		}
		return b
	}
	// The index names an image manifest or an index (with the
	// provenance's manifest beside the image's).
	var man struct {
		MediaType string
		Config    struct{ Digest string }
		Layers    []struct{ Digest string }
		Manifests []struct {
			Digest   string
			Platform *struct{ Architecture string }
		}
	}
	desc := index.Manifests[0].Digest
	for range 2 {
		if err := json.Unmarshal([]byte(blob(oci, desc)), &man); err != nil {
			t.Fatalf("type=oci: manifest %s: %v", desc, err)
		}
		if len(man.Manifests) == 0 {
			break
		}
		for _, m := range man.Manifests {
			if m.Platform != nil && m.Platform.Architecture != "unknown" {
				desc = m.Digest
			}
		}
		man.Manifests = nil
	}
	if man.Config.Digest == "" || len(man.Layers) < 2 {
		t.Fatalf("type=oci: the image's manifest %s: %+v", desc, man)
	}
	blob(oci, man.Config.Digest)
	for _, l := range man.Layers {
		blob(oci, l.Digest)
	}

	dockerTar := filepath.Join(tmp, "y.tar")
	out = bkIn(t, d, cfg, nil, "buildx", "build", "--progress=plain", "-t", "bkarchive:1", "--output", "type=docker,dest="+dockerTar, dir)
	dock := readTar(dockerTar)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal([]byte(dock["manifest.json"]), &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("type=docker: manifest.json %q: %v; entries %v\n%s", dock["manifest.json"], err, keys(dock), out)
	}
	m := manifest[0]
	if strings.Join(m.RepoTags, ",") != "bkarchive:1" || len(m.Layers) < 2 {
		t.Errorf("type=docker: manifest.json %+v", m)
	}
	for _, p := range append([]string{m.Config}, m.Layers...) {
		if _, ok := dock[p]; !ok {
			t.Errorf("type=docker: the archive lacks %s: %v", p, keys(dock))
		}
	}
	// The archive went to the file alone: the engine has no bkarchive:1
	// until docker load.
	if out, err := d.Docker(t, "image", "inspect", "bkarchive:1"); err == nil {
		t.Errorf("--output type=docker,dest= also stored the image in the engine:\n%s", out)
	}
	if out, err := d.Docker(t, "load", "-i", dockerTar); err != nil || !strings.Contains(out, "Loaded image: bkarchive:1") {
		t.Fatalf("docker load -i %s: %v\n%s\n%s", dockerTar, err, out, d.Log())
	}
	if got := must(t, d, "run", "--rm", "bkarchive:1"); got != "archived" {
		t.Errorf("docker run bkarchive:1 = %q", got)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBuildKitParallelStages: two independent stages, each sleeping, and
// a last stage copying from both.
func TestBuildKitParallelStages(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": strings.ReplaceAll(`FROM BASE AS one
RUN sleep 2 && echo one > /one

FROM BASE AS two
RUN sleep 2 && echo two > /two

FROM BASE
COPY --from=one /one /one
COPY --from=two /two /two
`, "BASE", ref)})
	out := bkIn(t, d, buildxConfig(t), nil, "build", "--progress=plain", "-t", "bkpar", dir)
	for _, step := range []string{"RUN sleep 2 && echo one > /one", "RUN sleep 2 && echo two > /two"} {
		if got := stepStatus(out, step); got != "DONE" {
			t.Errorf("step %q: %q, want DONE:\n%s", step, got, out)
		}
	}
	if got := bkRun(t, d, "bkpar", "cat /one /two"); got != "one\ntwo" {
		t.Errorf("the files of bkpar: %q\n%s", got, out)
	}
}

// TestBuildKitDuPrune: docker buildx du lists the build's cache records,
// docker buildx prune -af empties it (the steps run again), and so does
// docker builder prune -af, which buildx serves.
func TestBuildKitDuPrune(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN cat /proc/sys/kernel/random/uuid > /u\n"})
	cfg := buildxConfig(t)
	step := "RUN cat /proc/sys/kernel/random/uuid > /u"
	build := func(want string) {
		t.Helper()
		out := bkIn(t, d, cfg, nil, "build", "--progress=plain", "-t", "bkdu", dir)
		if got := stepStatus(out, step); got != want {
			t.Errorf("build: step %q: %q, want %s:\n%s", step, got, want, out)
		}
	}
	// du reads docker buildx du: its records (the lines under the ID
	// header) and its Total line's figure.
	du := func() (records []string, total string) {
		t.Helper()
		out := bkIn(t, d, cfg, nil, "buildx", "du")
		ls := lines(out)
		if len(ls) == 0 || !strings.HasPrefix(ls[0], "ID") {
			t.Fatalf("docker buildx du:\n%s", out)
		}
		for _, l := range ls[1:] {
			f := strings.Fields(l)
			switch {
			case len(f) == 2 && f[0] == "Total:":
				total = f[1]
			case strings.HasSuffix(f[0], ":"): // Shared:, Private:, Reclaimable:
			default:
				records = append(records, l)
			}
		}
		return records, total
	}
	build("DONE")
	if records, total := du(); len(records) == 0 || total == "" || total == "0B" {
		t.Errorf("docker buildx du after a build: records %q, Total %q", records, total)
	}
	build("CACHED")

	for _, prune := range [][]string{{"buildx", "prune", "-af"}, {"builder", "prune", "-af"}} {
		out := bkIn(t, d, cfg, nil, prune...)
		if !strings.Contains(out, "Total:") {
			t.Errorf("docker %s:\n%s", strings.Join(prune, " "), out)
		}
		if records, total := du(); len(records) != 0 || total != "0B" {
			t.Errorf("docker buildx du after docker %s: records %q, Total %q", strings.Join(prune, " "), records, total)
		}
		// Nothing cached: the step runs again.
		build("DONE")
	}
}
