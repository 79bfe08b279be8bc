//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// BuildKit builds against the real daemon, driven by the real clients:
// the docker CLI with the buildx plugin (`docker build`, `docker buildx
// build`) and compose v5 (`docker compose up --build`, through buildx
// bake), which reach the daemon's BuildKit through POST /grpc and POST
// /session as with Docker.

// The plugins' pinned versions, as contrib/test/clients.sh builds them.
const (
	buildxVersion  = "v0.38.2"
	composeVersion = "v5.6.0"
)

var (
	pluginsOnce sync.Once
	pluginsDir  string
	pluginsErr  error
)

// cliPlugins is the directory contrib/test/clients.sh installed buildx and
// compose in: $HUTCH_TEST_CLI_PLUGINS, else
// /usr/local/share/hutch-test/cli-plugins. It is none of the docker CLI's
// default plugin directories (the classic builder's tests need a CLI
// without buildx), so the BuildKit tests name it in their config.json.
func cliPlugins(t testing.TB) string {
	t.Helper()
	pluginsOnce.Do(func() {
		pluginsDir = os.Getenv("HUTCH_TEST_CLI_PLUGINS")
		if pluginsDir == "" {
			pluginsDir = "/usr/local/share/hutch-test/cli-plugins"
		}
		for name, want := range map[string]string{"docker-buildx": buildxVersion, "docker-compose": composeVersion} {
			// Every CLI plugin answers docker-cli-plugin-metadata.
			out, err := exec.Command(filepath.Join(pluginsDir, name), "docker-cli-plugin-metadata").Output()
			var meta struct{ Version string }
			if err == nil {
				err = json.Unmarshal(out, &meta)
			}
			if err == nil && meta.Version != want {
				err = fmt.Errorf("it is %s, want %s", meta.Version, want)
			}
			if err != nil {
				pluginsErr = fmt.Errorf("the docker CLI plugin %s %s is not installed in %s (run `HUTCH_TEST_USER=<user> bash contrib/test/setup-root.sh` as root): %v", name, want, pluginsDir, err)
				return
			}
		}
	})
	if pluginsErr != nil {
		t.Fatal(pluginsErr)
	}
	return pluginsDir
}

// Buildx runs the real docker CLI against d, as Docker does, with the
// pinned buildx and compose plugins (a DOCKER_CONFIG whose config.json
// names their directory) and env added to the environment: `docker build`
// then goes to buildx, as on a Docker install with buildx. Builds get 5
// minutes.
func (d *daemon) Buildx(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	return d.buildxIn(t, buildxConfig(t), env, "", args...)
}

// bk runs d.Buildx without extra environment and fails the test on error.
func bk(t *testing.T, d *daemon, args ...string) string {
	t.Helper()
	out, err := d.Buildx(t, nil, args...)
	if err != nil {
		t.Fatalf("docker %s: %v\n%s\n--- daemon log ---\n%s", strings.Join(args, " "), err, out, d.Log())
	}
	return strings.TrimSpace(out)
}

// stepStatus is how the plain progress out ended the step whose name
// contains step (`#7 [a 2/2] RUN echo a > /a`): "DONE", "CACHED",
// "ERROR", or "" when no such step is shown.
func stepStatus(out, step string) string {
	m := regexp.MustCompile(`(?m)^#(\d+) \[[^\]]*\] ` + regexp.QuoteMeta(step)).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	s := regexp.MustCompile(`(?m)^#` + m[1] + ` (DONE|CACHED|ERROR)\b`).FindStringSubmatch(out)
	if s == nil {
		return ""
	}
	return s[1]
}

func TestBuildKitBuild(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"Dockerfile": strings.ReplaceAll(`FROM BASE AS a
RUN echo a > /a

FROM BASE AS b
RUN echo b > /b

FROM BASE
COPY --from=a /a /a
COPY --from=b /b /b
RUN <<EOF
echo heredoc > /heredoc
echo second line >> /heredoc
EOF
COPY --chmod=0600 file /file
ENV BK=kit
LABEL made.by=buildkit
CMD ["cat", "/heredoc"]
`, "BASE", ref),
		"file": "from the context\n",
	})
	out := bk(t, d, "build", "--progress=plain", "-t", "bk1", dir)
	if !regexp.MustCompile(`(?m)^#\d+ DONE\b`).MatchString(out) || strings.Contains(out, "Step 1/") {
		t.Errorf("docker build did not go to BuildKit:\n%s", out)
	}
	for _, step := range []string{"RUN echo a > /a", "RUN echo b > /b"} {
		if got := stepStatus(out, step); got != "DONE" {
			t.Errorf("step %q: %q, want DONE:\n%s", step, got, out)
		}
	}
	if got := bk(t, d, "run", "--rm", "bk1"); got != "heredoc\nsecond line" {
		t.Errorf("docker run bk1 = %q", got)
	}
	if got := bk(t, d, "run", "--rm", "bk1", "sh", "-c", "cat /a /b /file; stat -c %a /file"); got != "a\nb\nfrom the context\n600" {
		t.Errorf("the files of bk1: %q", got)
	}
	insp := bk(t, d, "image", "inspect", "--format", "{{json .Config.Labels}} {{json .Config.Cmd}} {{json .Config.Env}}", "bk1")
	if !strings.HasPrefix(insp, `{"made.by":"buildkit"} ["cat","/heredoc"] [`) || !strings.Contains(insp, `"BK=kit"`) {
		t.Errorf("inspect bk1 = %s", insp)
	}

	// --target: stage a alone, built by buildx itself.
	out = bk(t, d, "buildx", "build", "--progress=plain", "-t", "bk2", "--target", "a", dir)
	if got := bk(t, d, "run", "--rm", "bk2", "sh", "-c", "cat /a; test -e /b || echo no b"); got != "a\nno b" {
		t.Errorf("the files of bk2 (--target a): %q\n%s", got, out)
	}

	// The same build again comes from BuildKit's cache.
	out = bk(t, d, "build", "--progress=plain", "-t", "bk3", dir)
	for _, step := range []string{"RUN echo a > /a", "RUN echo b > /b"} {
		if got := stepStatus(out, step); got != "CACHED" {
			t.Errorf("rebuild: step %q: %q, want CACHED:\n%s", step, got, out)
		}
	}
	if got := bk(t, d, "run", "--rm", "bk3", "cat", "/a", "/b", "/heredoc"); got != "a\nb\nheredoc\nsecond line" {
		t.Errorf("the files of bk3: %q", got)
	}
}

func TestBuildKitMounts(t *testing.T) {
	// At debug level: the secret must not reach the logs at any level.
	d, ref := pulled(t, "--log-level", "debug")
	secret := fmt.Sprintf("hutch-bk-secret-%d", time.Now().UnixNano())
	sum := sha256.Sum256([]byte(secret))
	dir := buildDir(t, map[string]string{
		"Dockerfile": strings.ReplaceAll(strings.ReplaceAll(`FROM BASE AS a
RUN echo from-a > /a

FROM BASE
ARG N=1
RUN --mount=type=cache,target=/cache echo "run $N" >> /cache/log && cat /cache/log > /cachelog
RUN --mount=type=bind,from=a,source=/a,target=/x cat /x > /bound
RUN --mount=type=tmpfs,target=/t echo tmp > /t/f && cat /t/f > /tmpfs-seen && grep -q ' /t tmpfs ' /proc/mounts
RUN --mount=type=secret,id=s cat /run/secrets/s > /dev/null && test -s /run/secrets/s && sha256sum /run/secrets/s | grep -q '^SUM '
`, "BASE", ref), "SUM", hex.EncodeToString(sum[:])),
	})
	secretFile := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for n, want := range []string{"run 1", "run 1\nrun 2"} {
		// Another N runs the steps again; the cache mount keeps its files.
		out := bk(t, d, "build", "--progress=plain", "--secret", "id=s,src="+secretFile, "--build-arg", fmt.Sprintf("N=%d", n+1), "-t", "bkm", dir)
		if strings.Contains(out, secret) {
			t.Errorf("the build printed the secret:\n%s", out)
		}
		if got := bk(t, d, "run", "--rm", "bkm", "cat", "/cachelog"); got != want {
			t.Errorf("build %d: /cachelog = %q, want %q\n%s", n+1, got, want, out)
		}
	}
	// What the mounts held is not in the image.
	if got := bk(t, d, "run", "--rm", "bkm", "sh", "-c", "cat /bound /tmpfs-seen; for f in /cache/log /t/f; do test -e $f && echo $f kept; done; true"); got != "from-a\ntmp" {
		t.Errorf("the files of bkm: %q", got)
	}

	// The secret is nowhere in the image: not its config, its history or
	// the layers docker save writes.
	if insp := bk(t, d, "image", "inspect", "bkm"); strings.Contains(insp, secret) {
		t.Errorf("the secret is in docker image inspect:\n%s", insp)
	}
	if hist := bk(t, d, "history", "--no-trunc", "bkm"); strings.Contains(hist, secret) {
		t.Errorf("the secret is in docker history:\n%s", hist)
	}
	saved := filepath.Join(t.TempDir(), "bkm.tar")
	bk(t, d, "save", "-o", saved, "bkm")
	if where := archiveHolds(t, saved, []byte(secret)); len(where) > 0 {
		t.Errorf("the secret is in docker save's archive: %q", where)
	}
	// Nor in the daemon's log or BuildKit's.
	if strings.Contains(d.Log(), secret) {
		t.Error("the secret is in the daemon's log")
	}
	bkLog := filepath.Join(envValue(d.env, "XDG_RUNTIME_DIR"), "hutch", "buildkit", "buildkit.log")
	if b, err := os.ReadFile(bkLog); err != nil || len(b) == 0 || strings.Contains(string(b), secret) {
		t.Errorf("BuildKit's log %s (%v): empty, or holds the secret", bkLog, err)
	}
}

// archiveHolds lists where needle is in the tar file at path: the archive
// itself (which holds uncompressed layers as they are), and its entries
// decompressed when gzip-compressed.
func archiveHolds(t *testing.T, path string, needle []byte) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	if bytes.Contains(b, needle) {
		where = append(where, path)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	entries := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		entries++
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			if plain, err := io.ReadAll(zr); err == nil && bytes.Contains(plain, needle) {
				where = append(where, h.Name)
			}
		}
	}
	if entries == 0 {
		t.Fatalf("%s is an empty archive", path)
	}
	return where
}

func TestBuildKitOutputs(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + ` AS build
ARG WHO=nobody
RUN mkdir /out && echo "hello $WHO" > /out/greeting && echo two > /out/two
FROM scratch
COPY --from=build /out/ /
`})
	tmp := t.TempDir()

	// The result's files in a directory, and in a tar archive.
	local := filepath.Join(tmp, "local")
	bk(t, d, "buildx", "build", "--build-arg", "WHO=bk", "--output", "type=local,dest="+local, dir)
	for name, want := range map[string]string{"greeting": "hello bk\n", "two": "two\n"} {
		if b, err := os.ReadFile(filepath.Join(local, name)); err != nil || string(b) != want {
			t.Errorf("--output type=local: %s = %q, %v; want %q", name, b, err, want)
		}
	}
	tarFile := filepath.Join(tmp, "out.tar")
	bk(t, d, "buildx", "build", "--build-arg", "WHO=bk", "--output", "type=tar,dest="+tarFile, dir)
	f, err := os.Open(tarFile)
	if err != nil {
		t.Fatal(err)
	}
	_, entries := untar(t, f)
	f.Close()
	files := map[string]string{}
	for name, body := range entries {
		files[strings.TrimPrefix(name, "./")] = body
	}
	if files["greeting"] != "hello bk\n" || files["two"] != "two\n" {
		t.Errorf("--output type=tar: %q", files)
	}

	// An image, its ID in --iidfile and --metadata-file.
	iidFile, metaFile := filepath.Join(tmp, "iid"), filepath.Join(tmp, "meta.json")
	bk(t, d, "build", "--build-arg", "WHO=bk", "-t", "bko", "--iidfile", iidFile, "--metadata-file", metaFile, dir)
	iid, err := os.ReadFile(iidFile)
	if err != nil {
		t.Fatal(err)
	}
	id := bk(t, d, "image", "inspect", "-f", "{{.Id}}", "bko")
	if string(iid) != id || !strings.HasPrefix(id, "sha256:") {
		t.Errorf("--iidfile holds %q, docker image inspect bko says %q", iid, id)
	}
	mb, err := os.ReadFile(metaFile)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	// buildx's docker driver reports the image's id as containerimage.digest
	// (and drops the config digest) where the daemon's builder has its own
	// image store, as Docker's containerd store does.
	if err := json.Unmarshal(mb, &meta); err != nil || meta["containerimage.digest"] != id {
		t.Errorf("--metadata-file (%v):\n%s\nwant containerimage.digest %s", err, mb, id)
	}

	// Options of the RUN steps' sandbox.
	for i, c := range []struct {
		name string
		args []string
		run  string // writes /r
		want string
	}{
		{"build-arg", []string{"--build-arg", "WHO=bk"}, `echo "hello $WHO" > /r`, "hello bk"},
		{"network none", []string{"--network", "none"}, `awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev > /r`, "lo"},
		{"add-host", []string{"--add-host", "foo:10.1.2.3"}, `awk '$2 == "foo" { print $1, $2 }' /etc/hosts > /r`, "10.1.2.3 foo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nARG WHO=nobody\nRUN " + c.run + "\n"})
			tag := fmt.Sprintf("bko-%d", i)
			out := bk(t, d, append(append([]string{"build", "--progress=plain", "-t", tag}, c.args...), dir)...)
			if got := bk(t, d, "run", "--rm", tag, "cat", "/r"); got != c.want {
				t.Errorf("/r = %q, want %q\n%s", got, c.want, out)
			}
		})
	}
}

func TestBuildKitErrors(t *testing.T) {
	d, ref := pulled(t)
	before := lines(must(t, d, "images", "-aq"))
	for _, c := range []struct {
		name, dockerfile string
		want             []string
	}{
		{"unknown instruction", "FROM " + ref + "\nRUN true\nFOO bar\n", []string{"Dockerfile:3", ">>> FOO bar", "unknown instruction"}},
		{"failing RUN", "FROM " + ref + "\nENV A=1\nRUN echo failing-step; exit 3\n", []string{"failing-step", "exit code: 3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := d.Buildx(t, nil, "build", "--progress=plain", "-t", "bkerr", buildDir(t, map[string]string{"Dockerfile": c.dockerfile}))
			if err == nil {
				t.Fatalf("the build succeeded:\n%s", out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("the build's output lacks %q:\n%s", want, out)
				}
			}
			if out, err := d.Docker(t, "image", "inspect", "bkerr"); err == nil {
				t.Errorf("a failed build tagged bkerr:\n%s", out)
			}
		})
	}
	if after := lines(must(t, d, "images", "-aq")); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("images after the failed builds: %q, before: %q", after, before)
	}
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left by the failed builds: %q", ps)
	}
}

// TestBuildKitClassicStill: DOCKER_BUILDKIT=0 sends the same CLI, buildx
// installed, to the classic builder, as on Docker.
func TestBuildKitClassicStill(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo classic > /c\nCMD [\"cat\", \"/c\"]\n"})
	out, err := d.Buildx(t, []string{"DOCKER_BUILDKIT=0"}, "build", "-t", "classic1", dir)
	if err != nil || !strings.Contains(out, "Step 1/3 : FROM "+ref) || !strings.Contains(out, "Successfully tagged classic1:latest") {
		t.Fatalf("DOCKER_BUILDKIT=0 docker build: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	if got := bk(t, d, "run", "--rm", "classic1"); got != "classic" {
		t.Errorf("docker run classic1 = %q", got)
	}
}

// TestComposeV5Build: compose v5 builds a service through buildx bake and
// runs it.
func TestComposeV5Build(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"compose.yaml": "services:\n  web:\n    build: .\n    image: bkc-web\n",
		"Dockerfile":   "FROM " + ref + "\nRUN echo built-by-compose > /built\nCMD [\"sleep\", \"300\"]\n",
	})
	compose := func(args ...string) string {
		t.Helper()
		return bk(t, d, append([]string{"compose", "-f", filepath.Join(dir, "compose.yaml"), "-p", "bkc", "--ansi", "never"}, args...)...)
	}
	if out := compose("up", "-d", "--build"); strings.Contains(out, "falling back to the classic builder") {
		t.Errorf("compose did not build with buildx:\n%s", out)
	}
	if got := compose("ps", "--format", "{{.Service}} {{.State}}"); got != "web running" {
		t.Errorf("docker compose ps: %q", got)
	}
	if got := compose("exec", "-T", "web", "cat", "/built"); got != "built-by-compose" {
		t.Errorf("docker compose exec web cat /built: %q", got)
	}
	// compose labels the images it builds; the classic builder's path
	// would also add com.docker.compose.image.builder=classic.
	var labels map[string]string
	if err := json.Unmarshal([]byte(must(t, d, "image", "inspect", "-f", "{{json .Config.Labels}}", "bkc-web")), &labels); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"com.docker.compose.project": "bkc", "com.docker.compose.service": "web", "com.docker.compose.version": strings.TrimPrefix(composeVersion, "v")}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s of bkc-web: %q, want %q (labels %v)", k, labels[k], v, labels)
		}
	}
	if b, ok := labels["com.docker.compose.image.builder"]; ok {
		t.Errorf("bkc-web was built by the %s builder, not buildx bake", b)
	}
	// DOCKER_BUILDKIT=0: compose builds with the classic builder (POST
	// /build), and says so in the image's labels.
	out, err := d.Buildx(t, []string{"DOCKER_BUILDKIT=0"}, "compose", "-f", filepath.Join(dir, "compose.yaml"), "-p", "bkc", "--ansi", "never", "build", "--no-cache")
	if err != nil {
		t.Fatalf("DOCKER_BUILDKIT=0 docker compose build: %v\n%s", err, out)
	}
	if b := must(t, d, "image", "inspect", "-f", `{{index .Config.Labels "com.docker.compose.image.builder"}}`, "bkc-web"); b != "classic" {
		t.Errorf("DOCKER_BUILDKIT=0: bkc-web's builder label %q, want classic\n%s", b, out)
	}
	compose("down", "-t", "1")
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left after compose down: %q", ps)
	}
	if nets := must(t, d, "network", "ls", "-q", "--filter", "name=bkc_default"); nets != "" {
		t.Errorf("compose down left its network: %q", nets)
	}
}

// envValue is the value of key in env (KEY=VALUE entries), "" if none.
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
