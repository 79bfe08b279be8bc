//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Compose v5 (the pinned docker-compose plugin) as a project uses it day
// to day: health-gated start with `up --wait`, a dependency whose restart
// restarts its dependents, profiles, a volume of type image, interface
// names and gateway priorities on networks, and the
// commands around a running project (ls, images, top, port, cp, run,
// stats, events, down --rmi).

const composeV5File = `name: hcv5
services:
  db:
    image: BASE
    command: ["sh", "-c", "sleep 1; touch /tmp/ready; exec sleep 600"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 30s
      start_period: 60s
      start_interval: 200ms
  web:
    build: ./web
    command: ["sleep", "601"]
    ports: ["127.0.0.1::80"]
    volumes:
      - type: image
        source: BASE
        target: /img
        image:
          subpath: etc
    networks:
      default:
        interface_name: app0
      back:
        gw_priority: 10
    depends_on:
      db:
        condition: service_healthy
        restart: true
  tool:
    image: BASE
    profiles: ["tools"]
    command: ["sh", "-c", "echo tool-ran-$$TOOLARG"]
    environment:
      TOOLARG: one
networks:
  back: {}
`

// compose runs docker compose for the project in dir.
func composeIn(t *testing.T, d *daemon, dir string, args ...string) string {
	t.Helper()
	return bk(t, d, append([]string{"compose", "--project-directory", dir, "--ansi", "never"}, args...)...)
}

func TestComposeV5Project(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"compose.yaml":   strings.ReplaceAll(composeV5File, "BASE", ref),
		"web/Dockerfile": "FROM " + ref + "\nRUN echo web-image > /built\n",
		"note.txt":       "from-the-host\n",
	})
	compose := func(args ...string) string { t.Helper(); return composeIn(t, d, dir, args...) }
	t.Cleanup(func() { d.Buildx(t, nil, "compose", "--project-directory", dir, "down", "-v", "-t", "0") })

	// up --wait returns once db is healthy (its start interval, not its
	// 30 s interval, makes that quick) and web runs.
	compose("up", "-d", "--wait", "--wait-timeout", "60")
	ps := compose("ps", "--format", "{{.Service}} {{.State}} {{.Health}}")
	if !strings.Contains(ps, "db running healthy") || !strings.Contains(ps, "web running") || strings.Contains(ps, "tool") {
		t.Fatalf("compose ps after up --wait:\n%s", ps)
	}
	if got := compose("ls", "--format", "json"); !strings.Contains(got, `"Name":"hcv5"`) || !strings.Contains(got, "running(2)") {
		t.Errorf("compose ls: %s", got)
	}
	if got := compose("images", "--format", "json"); !strings.Contains(got, "hcv5-web") {
		t.Errorf("compose images lists no hcv5-web: %s", got)
	}
	if got := compose("top", "web"); !strings.Contains(got, "sleep 601") {
		t.Errorf("compose top web:\n%s", got)
	}
	if got := compose("port", "web", "80"); !strings.HasPrefix(got, "127.0.0.1:") || got == "127.0.0.1:0" {
		t.Errorf("compose port web 80: %q", got)
	}
	// cp both ways.
	compose("cp", filepath.Join(dir, "note.txt"), "web:/tmp/note.txt")
	if got := compose("exec", "-T", "web", "cat", "/tmp/note.txt", "/built"); got != "from-the-host\nweb-image" {
		t.Errorf("files in web: %q", got)
	}
	// interface_name names web's interface on the default network, and
	// gw_priority puts its default route on back.
	if got := compose("exec", "-T", "web", "sh", "-c", "ip -o link show app0 | cut -d: -f2; ip route | grep ^default | cut -d' ' -f5"); !strings.HasPrefix(got, "app0@if") || !strings.HasSuffix(got, "\neth0") {
		t.Errorf("web's interfaces and default route: %q", got)
	}
	// volumes of type image: the image's etc, read-only.
	if got := compose("exec", "-T", "web", "sh", "-c", "head -1 /img/passwd; touch /img/x 2>/dev/null || echo read-only"); got != "root:x:0:0:root:/root:/bin/sh\nread-only" {
		t.Errorf("the image volume in web: %q", got)
	}
	compose("cp", "web:/built", filepath.Join(dir, "built.txt"))
	if b, err := os.ReadFile(filepath.Join(dir, "built.txt")); err != nil || string(b) != "web-image\n" {
		t.Errorf("copied out of web: %q, %v", b, err)
	}
	if got := compose("stats", "--no-stream", "--format", "{{.Name}}"); !strings.Contains(got, "hcv5-db-1") || !strings.Contains(got, "hcv5-web-1") {
		t.Errorf("compose stats: %q", got)
	}
	// A profiled service runs on demand, with its environment.
	if got := compose("--profile", "tools", "run", "--rm", "-T", "tool"); !strings.Contains(got, "tool-ran-one") {
		t.Errorf("compose run tool: %q", got)
	}
	if got := compose("ps", "-a", "--format", "{{.Service}}"); strings.Contains(got, "tool") {
		t.Errorf("run --rm left the tool container: %q", got)
	}

	// restart: true — restarting db restarts web, which depends on it;
	// compose's events show both.
	webStarted := must(t, d, "inspect", "-f", "{{.State.StartedAt}}", "hcv5-web-1")
	stopEvents := composeEvents(t, d, dir)
	compose("restart", "db")
	if after := must(t, d, "inspect", "-f", "{{.State.StartedAt}}", "hcv5-web-1"); after == webStarted {
		t.Errorf("web was not restarted with db (started %s)", after)
	}
	ev := stopEvents(`"action":"restart"`)
	for _, want := range []string{`"service":"db"`, `"service":"web"`, `"action":"restart"`} {
		if !strings.Contains(ev, want) {
			t.Errorf("compose events lack %s:\n%s", want, ev)
		}
	}

	// down --rmi local removes the image compose built (it has no image:
	// name of the project's choosing) and keeps the pulled one.
	compose("down", "--rmi", "local", "-t", "1")
	if got := must(t, d, "images", "--format", "{{.Repository}}"); strings.Contains(got, "hcv5-web") || !strings.Contains(got, "busybox") {
		t.Errorf("images after down --rmi local:\n%s", got)
	}
	if left := must(t, d, "ps", "-aq", "--filter", "label=com.docker.compose.project=hcv5"); left != "" {
		t.Errorf("containers left after down: %s", left)
	}
}

// composeEvents runs `docker compose events --json` for the project in
// dir in the background, and returns once it is listening: it shows the
// exec it is sent for that. stop waits (up to a minute) for an event
// containing until, ends it and returns what it printed.
func composeEvents(t *testing.T, d *daemon, dir string) (stop func(until string) string) {
	t.Helper()
	cmd := d.buildxCmd(t, buildxConfig(t), "compose", "--project-directory", dir, "events", "--json")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	end := func() { cmd.Process.Kill(); cmd.Wait() }
	t.Cleanup(end)
	waitFor := func(what string) bool {
		for range 120 {
			if strings.Contains(out.String(), what) {
				return true
			}
			time.Sleep(500 * time.Millisecond)
		}
		return false
	}
	listening := false
	for range 30 {
		composeIn(t, d, dir, "exec", "-T", "web", "true")
		if strings.Contains(out.String(), "exec_start") {
			listening = true
			break
		}
		time.Sleep(time.Second)
	}
	if !listening {
		t.Fatalf("compose events shows no exec:\n%s", out.String())
	}
	return func(until string) string {
		waitFor(until)
		end()
		return out.String()
	}
}

// compose watch: a change under a sync path reaches the running
// container, one under a sync+restart path also restarts it, and one to a
// rebuild path builds the image again and replaces the container.
func TestComposeV5Watch(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"compose.yaml": `name: hcv5w
services:
  app:
    build: .
    command: ["sh", "-c", "exec sleep 600"]
    develop:
      watch:
        - action: sync
          path: ./src
          target: /app/src
        - action: sync+restart
          path: ./conf
          target: /app/conf
        - action: rebuild
          path: ./version
`,
		"Dockerfile":  "FROM " + ref + "\nCOPY . /app\n",
		"version":     "1\n",
		"src/a.txt":   "a\n",
		"conf/c.conf": "c1\n",
	})
	t.Cleanup(func() { d.Buildx(t, nil, "compose", "--project-directory", dir, "down", "-t", "0", "--rmi", "local") })
	cmd := d.buildxCmd(t, buildxConfig(t), "compose", "--project-directory", dir, "--ansi", "never", "watch")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for range 240 {
			if ok() {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatalf("%s did not happen; compose watch said:\n%s\n--- daemon log ---\n%s", what, out.String(), d.Log())
	}
	inApp := func(args ...string) string {
		o, _ := d.Buildx(t, nil, append([]string{"compose", "--project-directory", dir, "exec", "-T", "app"}, args...)...)
		return strings.TrimSpace(o)
	}
	eventually("watch enabled", func() bool { return strings.Contains(out.String(), "Watch enabled") })
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("src/new.txt", "synced\n")
	eventually("sync of src/new.txt", func() bool { return inApp("cat", "/app/src/new.txt") == "synced" })

	started := must(t, d, "inspect", "-f", "{{.State.StartedAt}}", "hcv5w-app-1")
	write("conf/c.conf", "c2\n")
	eventually("sync+restart of conf/c.conf", func() bool {
		o, _ := d.Docker(t, "inspect", "-f", "{{.State.StartedAt}}", "hcv5w-app-1")
		return strings.TrimSpace(o) != started && inApp("cat", "/app/conf/c.conf") == "c2"
	})

	id := must(t, d, "inspect", "-f", "{{.Id}}", "hcv5w-app-1")
	write("version", "2\n")
	eventually("rebuild for version", func() bool {
		o, _ := d.Docker(t, "inspect", "-f", "{{.Id}}", "hcv5w-app-1")
		return strings.TrimSpace(o) != id && inApp("cat", "/app/version") == "2"
	})
}
