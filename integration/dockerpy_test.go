//go:build integration

package integration

import (
	"context"
	_ "embed"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// dockerpyCheck is run by python3 from its standard input: the test binary
// runs from another directory than its source.
//
//go:embed testdata/dockerpy_check.py
var dockerpyCheck string

// docker-py (Debian's python3-docker 5.0.3) against the real daemon, at
// the newest API version (version="auto", what DockerClient does by
// default) and pinned to 1.41, the version its APIClient defaults to:
// testdata/dockerpy_check.py pulls, builds, pushes, runs, execs, copies,
// and uses networks, volumes and events as scripts do.
func TestDockerPy(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is not installed (make test installs python3-docker): %v", err)
	}
	if out, err := exec.Command("python3", "-c", "import docker").CombinedOutput(); err != nil {
		t.Fatalf("docker-py is not installed (make test installs the Debian package python3-docker): %v\n%s", err, out)
	}
	d, ref := pulled(t)
	registry := strings.SplitN(ref, "/", 2)[0]
	for _, version := range []string{"auto", "1.41"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "python3", "-", d.Host(), ref, registry, version)
			cmd.Stdin = strings.NewReader(dockerpyCheck)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("dockerpy_check.py: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
			}
		})
	}
}
