//go:build integration

package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// docker-compose v1 (Debian's docker-compose 1.29.2, Python on docker-py
// 5.0.3) against the real daemon: a project with a built service, a
// health-gated dependency, a named network and volume, then the changes
// compose users make (scale, a recreation, restart, down -v).

// composeV1File is the project: web is built from ./web, client waits for
// web to be healthy and reaches it by its alias on the named network.
const composeV1File = `version: "2.4"
services:
  web:
    build:
      context: ./web
      args: {GREETING: hi}
    image: hutchtest/compose-web:latest
    environment: ["WEBENV=${WEBENV:-1}"]
    labels: {my.label: web}
    ports: ["127.0.0.1::80"]
    networks:
      front: {aliases: [www]}
    volumes: ["data:/data"]
    healthcheck:
      test: ["CMD", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1/"]
      interval: 1s
      timeout: 2s
      retries: 30
  client:
    image: BASE
    command: ["sh", "-c", "wget -q -O - http://www/; sleep 300"]
    environment: {TARGET: web}
    depends_on:
      web: {condition: service_healthy}
    networks: [front]
    volumes: ["data:/data:ro"]
  once:
    image: BASE
    command: ["sh", "-c", "echo once-ran; exit 3"]
    profiles: [once]
networks:
  front:
    labels: {net.label: x}
volumes:
  data: {}
`

const composeV1Dockerfile = `FROM BASE
RUN mkdir -p /www && echo hello-from-web > /www/index.html
VOLUME /anon
ARG GREETING=none
ENV GREETING=$GREETING
CMD ["httpd", "-f", "-p", "80", "-h", "/www"]
`

// composeV1 runs docker-compose in dir against d, with extra environment.
func composeV1(t *testing.T, d *daemon, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is not installed (make test installs the Debian package docker-compose): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-p", "hutchcv1", "--ansi", "never"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+t.TempDir()), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestComposeV1(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{
		"docker-compose.yml": strings.ReplaceAll(composeV1File, "BASE", ref),
		"web/Dockerfile":     strings.ReplaceAll(composeV1Dockerfile, "BASE", ref),
	})
	compose := func(env []string, args ...string) string {
		t.Helper()
		out, err := composeV1(t, d, dir, env, args...)
		if err != nil || strings.Contains(out, "Traceback") {
			t.Fatalf("docker-compose %s: %v\n%s\n--- daemon log ---\n%s", strings.Join(args, " "), err, out, d.Log())
		}
		return out
	}
	t.Cleanup(func() { composeV1(t, d, dir, nil, "down", "-v", "--remove-orphans") })

	if out := compose(nil, "config"); !strings.Contains(out, "condition: service_healthy") {
		t.Errorf("config:\n%s", out)
	}
	compose(nil, "build")
	compose(nil, "up", "-d")
	if out := compose(nil, "ps"); !strings.Contains(out, "hutchcv1_web_1") || !strings.Contains(out, "hutchcv1_client_1") || !strings.Contains(out, "(healthy)") {
		t.Errorf("ps after up:\n%s", out)
	}
	if out := compose(nil, "logs", "client"); !strings.Contains(out, "hello-from-web") {
		t.Errorf("client did not reach web by its alias:\n%s", out)
	}
	if out := compose(nil, "exec", "-T", "web", "sh", "-c", "echo $WEBENV $GREETING; echo kept > /data/named; echo kept > /anon/anon"); strings.TrimSpace(out) != "1 hi" {
		t.Errorf("exec: %q", out)
	}
	if out := compose(nil, "run", "--rm", "-T", "client", "sh", "-c", "echo $TARGET; cat /data/named"); !strings.Contains(out, "web\nkept") {
		t.Errorf("run --rm: %q", out)
	}
	compose(nil, "up", "-d", "--scale", "client=2")
	if got := lines(must(t, d, "ps", "-q", "--filter", "label=com.docker.compose.project=hutchcv1", "--filter", "label=com.docker.compose.service=client")); len(got) != 2 {
		t.Errorf("client containers after scale: %v", got)
	}

	// A changed environment recreates web: compose reads the image's
	// ContainerConfig to carry its anonymous volume over.
	compose([]string{"WEBENV=2"}, "up", "-d", "web")
	if out := compose([]string{"WEBENV=2"}, "exec", "-T", "web", "sh", "-c", "echo $WEBENV; cat /data/named /anon/anon"); out != "2\nkept\nkept\n" {
		t.Errorf("after the recreation: %q", out)
	}
	compose([]string{"WEBENV=2"}, "restart", "-t", "1", "web")

	// The event watcher of an attached up reads the events' id and status.
	out, err := composeV1(t, d, dir, nil, "--profile", "once", "up", "--exit-code-from", "once", "once")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(out, "once-ran") || strings.Contains(out, "Traceback") {
		t.Errorf("up --exit-code-from: %v\n%s", err, out)
	}

	compose([]string{"WEBENV=2"}, "stop", "-t", "1")
	compose(nil, "--profile", "once", "down", "-v")
	if left := must(t, d, "ps", "-aq", "--filter", "label=com.docker.compose.project=hutchcv1"); left != "" {
		t.Errorf("containers left after down: %s", left)
	}
	if left := must(t, d, "volume", "ls", "-q", "--filter", "label=com.docker.compose.project=hutchcv1"); left != "" {
		t.Errorf("volumes left after down -v: %s", left)
	}
	if left := must(t, d, "network", "ls", "-q", "--filter", "label=com.docker.compose.project=hutchcv1"); left != "" {
		t.Errorf("networks left after down: %s", left)
	}
}
