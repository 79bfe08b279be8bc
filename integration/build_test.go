//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// docker build (the classic builder, POST /build) against the real daemon:
// the docker CLI, which uses it because /_ping says Builder-Version 1, and
// the Go SDK.

// buildDir writes files (name → content) into a new context directory.
func buildDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuild(t *testing.T) {
	d, ref := pulled(t)
	imagesBefore := lines(must(t, d, "images", "-aq"))
	dir := buildDir(t, map[string]string{
		"Dockerfile": `ARG BASE
FROM $BASE AS base
ARG GREETING=hello
ENV WHO=world
WORKDIR /app
COPY greet.txt ./
COPY sub/ /app/sub/
RUN echo "$GREETING $WHO" > /app/out.txt && cat /app/greet.txt
LABEL team=hutch
EXPOSE 8080
CMD ["cat", "/app/out.txt"]

FROM base
COPY --from=base /app/out.txt /copied.txt
COPY . /ctx/
`,
		"greet.txt":     "from the context",
		"sub/a/b.txt":   "deep\n",
		"secret.txt":    "do not send",
		".dockerignore": "secret.txt\n",
	})
	out := must(t, d, "build", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=hi", "-t", "built:1", dir)
	for _, want := range []string{"Step 1/14 : ARG BASE", "Step 2/14 : FROM $BASE AS base", "Step 14/14 : COPY . /ctx/", "from the context", "Successfully built", "Successfully tagged built:1"} {
		if !strings.Contains(out, want) {
			t.Errorf("docker build output lacks %q:\n%s", want, out)
		}
	}
	if got := must(t, d, "run", "--rm", "built:1"); got != "hi world" {
		t.Errorf("docker run built:1 = %q", got)
	}
	if got := must(t, d, "run", "--rm", "built:1", "sh", "-c", "cat /copied.txt /app/sub/a/b.txt; ls /ctx; pwd"); got != "hi world\ndeep\nDockerfile\ngreet.txt\nsub\n/app" {
		t.Errorf("files of built:1 = %q", got)
	}
	insp := must(t, d, "image", "inspect", "--format", "{{.Config.WorkingDir}} {{json .Config.Cmd}} {{.Config.Labels.team}} {{json .Config.ExposedPorts}} {{json .Config.Env}}", "built:1")
	if !strings.HasPrefix(insp, `/app ["cat","/app/out.txt"] hutch {"8080/tcp":{}} [`) || !strings.Contains(insp, `"WHO=world"`) {
		t.Errorf("inspect built:1 = %s", insp)
	}
	hist := must(t, d, "history", "--no-trunc", "--format", "{{.CreatedBy}}", "built:1")
	if !strings.Contains(hist, `|1 GREETING=hi /bin/sh -c echo "$GREETING $WHO" > /app/out.txt && cat /app/greet.txt`) {
		t.Errorf("history of built:1 lacks the RUN with its build argument:\n%s", hist)
	}
	// No container is left; the steps' images are (the cache), shown by
	// docker images -a only.
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left by the build: %q", ps)
	}
	if got := lines(must(t, d, "images", "-q")); len(got) != len(imagesBefore)+1 {
		t.Errorf("images after the build: %q (before: %q)", got, imagesBefore)
	}
	if got := lines(must(t, d, "images", "-aq")); len(got) != len(imagesBefore)+11 {
		t.Errorf("images -a after the build: %d, want %d", len(got), len(imagesBefore)+11)
	}

	// The same build again comes from the cache: nothing runs, same image.
	id := must(t, d, "image", "inspect", "--format", "{{.Id}}", "built:1")
	out = must(t, d, "build", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=hi", "-t", "built:2", dir)
	if n := strings.Count(out, "Using cache"); n != 11 || strings.Contains(out, "from the context") {
		t.Errorf("rebuild: %d steps from the cache, want 11:\n%s", n, out)
	}
	if id2 := must(t, d, "image", "inspect", "--format", "{{.Id}}", "built:2"); id2 != id {
		t.Errorf("rebuild made %s, want %s", id2, id)
	}
	// A changed file misses the cache from its COPY on; so does another
	// build argument from the RUN that sees it; --no-cache misses all.
	if err := os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = must(t, d, "build", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=hi", "-t", "built:3", dir)
	if n := strings.Count(out, "Using cache"); n != 3 || !strings.Contains(out, "changed") {
		t.Errorf("build after a change: %d steps from the cache, want 3:\n%s", n, out)
	}
	out = must(t, d, "build", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=bye", "-t", "built:4", dir)
	if n := strings.Count(out, "Using cache"); n != 5 {
		t.Errorf("build with another argument: %d steps from the cache, want 5:\n%s", n, out)
	}
	if got := must(t, d, "run", "--rm", "built:4"); got != "bye world" {
		t.Errorf("docker run built:4 = %q", got)
	}
	out = must(t, d, "build", "--no-cache", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=bye", dir)
	if strings.Contains(out, "Using cache") || !strings.Contains(out, "changed") {
		t.Errorf("--no-cache build:\n%s", out)
	}
	// -q: the image's ID alone (after the CLI's own warning on stderr).
	q := lines(must(t, d, "build", "-q", "--build-arg", "BASE="+ref, "--build-arg", "GREETING=bye", "-t", "built:5", dir))
	if last := q[len(q)-1]; !strings.HasPrefix(last, "sha256:") || strings.Contains(strings.Join(q, "\n"), "Step") {
		t.Errorf("docker build -q printed %q", q)
	}
	imagesBefore = lines(must(t, d, "images", "-aq"))

	// A failing RUN: its error, and the container kept for inspection
	// as Docker keeps it (unless --force-rm); no image made.
	failing := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nENV A=1\nRUN echo failing; exit 3\n"})
	out, err := d.Docker(t, "build", "-t", "bad:1", failing)
	if err == nil || !strings.Contains(out, "The command '/bin/sh -c echo failing; exit 3' returned a non-zero code: 3") {
		t.Errorf("failing RUN: err %v, output:\n%s", err, out)
	}
	// The CLI exits with the RUN's code, which errorDetail carries.
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("docker build of a RUN that exits 3: %v, want exit status 3", err)
	}
	if ps := lines(must(t, d, "ps", "-aq", "--filter", "status=exited")); len(ps) != 1 {
		t.Errorf("failed step's container: %q, want one", ps)
	}
	if got := lines(must(t, d, "images", "-aq")); len(got) != len(imagesBefore)+1 {
		t.Errorf("images after the failed build: %q (before: %q), want one more, the ENV step's", got, imagesBefore)
	}
	if out, err := d.Docker(t, "image", "inspect", "bad:1"); err == nil {
		t.Errorf("a failed build tagged bad:1:\n%s", out)
	}
	// Its image (the ENV step's) stays with it, as in Docker.
	must(t, d, "container", "prune", "-f")
	imagesBefore = lines(must(t, d, "images", "-aq"))
	if out, err := d.Docker(t, "build", "--force-rm", "-t", "bad:1", failing); err == nil {
		t.Errorf("failing RUN with --force-rm succeeded:\n%s", out)
	}
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("--force-rm left containers: %q", ps)
	}
	if got := lines(must(t, d, "images", "-aq")); len(got) != len(imagesBefore) {
		t.Errorf("images after the failed build with --force-rm: %q (before: %q)", got, imagesBefore)
	}

	// Bad Dockerfiles and BuildKit-only options are refused before any step.
	for df, want := range map[string]string{
		"FROM " + ref + "\nFOO bar\n":                               "unknown instruction",
		"FROM " + ref + "\nRUN --mount=type=cache,target=/c true\n": "requires BuildKit",
		"FROM " + ref + "\nCOPY missing.txt /\n":                    "missing.txt",
		"FROM " + ref + "\nCOPY --chmod=755 Dockerfile /\n":         "requires BuildKit",
		"FROM " + ref + " AS a\nFROM a\nCOPY --from=nosuch /x /y\n": "nosuch",
	} {
		out, err := d.Docker(t, "build", buildDir(t, map[string]string{"Dockerfile": df}))
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("build of %q: err %v, want an error with %q:\n%s", df, err, want, out)
		}
	}
	// The CLI looks for the Dockerfile itself; the daemon's own check
	// answers clients that send a context without it.
	if out, err := d.Docker(t, "build", "-f", "Nope", dir); err == nil || !strings.Contains(out, "Nope") {
		t.Errorf("missing Dockerfile: err %v:\n%s", err, out)
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	tw.WriteHeader(&tar.Header{Name: "x", Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Close()
	code, body := rawDo(t, d, "POST", "/build?dockerfile=Nope", map[string]string{"Content-Type": "application/x-tar"}, &ctxTar)
	if code != 400 || !strings.Contains(body, "Cannot locate specified Dockerfile: Nope") {
		t.Errorf("POST /build without the Dockerfile: %d %s", code, body)
	}
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("refused builds left containers: %q", ps)
	}
}

// TestBuildScratch builds a static image on nothing, as Go programs'
// multi-stage builds do.
func TestBuildScratch(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": `FROM ` + ref + ` AS build
RUN mkdir -p /out/lib && echo static > /out/file && cp /bin/busybox /out/busybox && echo a > /out/lib/a.so && echo b > /out/lib/b.so && echo c > /out/lib/c.txt
FROM scratch
COPY --from=build /out/file /out/busybox /
COPY --from=build /out/lib/*.so /lib/
COPY --from=build /out/lib/a.* /one.so
ENTRYPOINT ["/busybox"]
CMD ["cat", "/file"]
`})
	must(t, d, "build", "-t", "scratchy", dir)
	if got := must(t, d, "run", "--rm", "scratchy"); got != "static" {
		t.Errorf("docker run scratchy = %q", got)
	}
	if got := must(t, d, "run", "--rm", "scratchy", "ls", "/", "/lib"); got != "/:\nbusybox\ndev\netc\nfile\nlib\none.so\nproc\nsys\n\n/lib:\na.so\nb.so" {
		t.Errorf("the files of scratchy: %q", got)
	}
	if got := must(t, d, "run", "--rm", "scratchy", "cat", "/one.so"); got != "a" {
		t.Errorf("/one.so = %q", got)
	}
	if out := must(t, d, "build", dir); strings.Count(out, "Using cache") != 6 {
		t.Errorf("rebuild:\n%s", out)
	}
}

// TestBuildVolume: after VOLUME, COPY still writes into the image while
// what RUN writes under the volume is lost, as with Docker's classic
// builder; no volume is left behind.
func TestBuildVolume(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"Dockerfile": "FROM " + ref + "\nVOLUME /vol\nCOPY f /vol/f\nRUN echo lost > /vol/run && echo kept > /run.txt\n",
		"f":          "copied\n",
	})
	must(t, d, "build", "-t", "withvol", dir)
	if got := must(t, d, "run", "--rm", "withvol", "sh", "-c", "ls /vol; cat /vol/f /run.txt"); got != "f\ncopied\nkept" {
		t.Errorf("withvol: %q", got)
	}
	if vols := must(t, d, "volume", "ls", "-q"); vols != "" {
		t.Errorf("volumes left: %q", vols)
	}
}

// TestBuildPrivateBase builds FROM an image of a registry with htpasswd
// auth that is not pulled yet: the CLI sends its logins in
// X-Registry-Config.
func TestBuildPrivateBase(t *testing.T) {
	reg, ref := privateBusybox(t)
	d := startDaemon(t)
	cfg := t.TempDir()
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo built > /f\n"})
	if out, err := dockerCfg(t, d, cfg, "", "build", "-t", "priv", dir); err == nil || !strings.Contains(out, "authentication required") {
		t.Errorf("build without login: %v\n%s", err, out)
	}
	if out, err := dockerCfg(t, d, cfg, "s3cret\n", "login", reg.Addr, "-u", "hutch", "--password-stdin"); err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	if out, err := dockerCfg(t, d, cfg, "", "build", "-t", "priv", dir); err != nil {
		t.Fatalf("build after login: %v\n%s\n%s", err, out, d.Log())
	}
	if got := must(t, d, "run", "--rm", "priv", "cat", "/f"); got != "built" {
		t.Errorf("cat /f = %q", got)
	}
	if strings.Contains(d.Log(), "s3cret") {
		t.Error("the daemon logged the password")
	}
}

// TestBuildCancelled: a client that goes away mid-RUN stops the build;
// the step's container is killed and removed, as Docker does.
func TestBuildCancelled(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := "FROM " + ref + "\nRUN echo started && sleep 60\n"
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg})
	tw.Write([]byte(df))
	tw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := api.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{"cancelled"}, Remove: true})
	if err != nil {
		t.Fatal(err)
	}
	// Read until the RUN has begun, then hang up.
	dec := json.NewDecoder(res.Body)
	for {
		var m struct{ Stream string }
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("the build ended before its RUN began: %v", err)
		}
		if strings.Contains(m.Stream, "started") {
			break
		}
	}
	cancel()
	res.Body.Close()
	waitFor(t, func() bool { return must(t, d, "ps", "-aq") == "" })
	if out, err := d.Docker(t, "image", "inspect", "cancelled"); err == nil {
		t.Errorf("the cancelled build tagged an image:\n%s", out)
	}
}

// TestBuildSDK drives POST /build through the Go SDK, as testcontainers
// does: a context tar made in memory, the stream read to its aux ID.
func TestBuildSDK(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	ctx := context.Background()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, content := range map[string]string{
		"build/Containerfile": "FROM " + ref + "\nARG V\nCOPY hello.txt /hello.txt\nRUN test \"$V\" = 42\n",
		"hello.txt":           "hello",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write([]byte(content))
	}
	tw.Close()
	v := "42"
	res, err := api.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags: []string{"sdk/built:latest"}, Dockerfile: "build/Containerfile", Remove: true,
		BuildArgs: map[string]*string{"V": &v}, Labels: map[string]string{"made-by": "sdk", "a.first": "one word"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	id, stream, errMsg := readBuildStream(t, res.Body)
	if errMsg != "" {
		t.Fatalf("build error: %s", errMsg)
	}
	// Docker's classic builder: one LABEL step per --label, keys in order,
	// each followed by its image's ID, as compose's build labels show.
	for _, step := range []string{"Step 5/6 : LABEL a.first=one word\n ---> ", "Step 6/6 : LABEL made-by=sdk\n ---> "} {
		if !strings.Contains(stream, step) {
			t.Errorf("no %q in the build's output:\n%s", step, stream)
		}
	}
	insp, err := api.ImageInspect(ctx, "sdk/built:latest")
	if err != nil {
		t.Fatal(err)
	}
	if insp.ID != id || insp.Config.Labels["made-by"] != "sdk" || insp.Config.Labels["a.first"] != "one word" {
		t.Errorf("image %s labels %v, aux ID %q", insp.ID, insp.Config.Labels, id)
	}
	if !slices.Contains(insp.RepoTags, "sdk/built:latest") {
		t.Errorf("tags %v", insp.RepoTags)
	}
}
