//go:build integration

package integration

import (
	"regexp"
	"strings"
	"testing"
)

// TestSocketInContainer: the API socket bind-mounted into a container, as
// Ryuk, Traefik, CI runners and `act` use Docker's, serves the docker CLI
// inside it (root in the container is the socket's owner outside), and
// the containers it starts are the daemon's own, siblings of the first.
func TestSocketInContainer(t *testing.T) {
	d, ref := pulled(t)
	script := `set -e
docker version --format 'api {{.Server.APIVersion}}'
docker run --rm ` + ref + ` echo sibling-ran
docker run -d --name sibling ` + ref + ` sleep 60 >/dev/null
docker ps --format 'name {{.Names}}'`
	out, err := d.Docker(t, "run", "--rm", "--name", "outer",
		"-v", d.Socket+":/var/run/docker.sock",
		"-v", dockerCLI(t)+":/usr/local/bin/docker:ro",
		"-e", "HOME=/tmp", ref, "sh", "-c", script)
	if err != nil {
		t.Fatalf("docker run with the socket mounted: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	if !regexp.MustCompile(`(?m)^api 1\.\d+$`).MatchString(out) {
		t.Errorf("docker version inside the container did not reach the daemon:\n%s", out)
	}
	for _, want := range []string{"sibling-ran", "name sibling", "name outer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	state, err := d.Docker(t, "inspect", "--format", "{{.State.Running}}", "sibling")
	if err != nil || strings.TrimSpace(state) != "true" {
		t.Fatalf("the container started from inside is not running outside: %v %q", err, state)
	}
	if out, err := d.Docker(t, "rm", "-f", "sibling"); err != nil {
		t.Fatalf("docker rm -f sibling: %v\n%s", err, out)
	}
}
