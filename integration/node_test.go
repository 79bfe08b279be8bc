//go:build integration

package integration

import (
	"bytes"
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Node.js clients' checks, run by node from their standard input with
// the packages that contrib/test/setup-root.sh installed with npm ci from
// testdata/node/package-lock.json.
var (
	//go:embed testdata/node/dockerode_check.js
	dockerodeCheck string
	//go:embed testdata/node/testcontainers_check.js
	testcontainersNodeCheck string
	//go:embed testdata/node/package-lock.json
	nodeLock []byte
	//go:embed testdata/node/common.js
	nodeCommon string
)

// nodeModules is where setup-root.sh installed the pinned packages:
// $HUTCH_TEST_NODE_DIR, else /usr/local/share/hutch-test/node. A lock that
// differs from the committed one means setup-root.sh has not run since it
// changed.
func nodeModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed (contrib/test/setup-root.sh installs nodejs): %v", err)
	}
	dir := os.Getenv("HUTCH_TEST_NODE_DIR")
	if dir == "" {
		dir = "/usr/local/share/hutch-test/node"
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil || !bytes.Equal(lock, nodeLock) {
		t.Fatalf("the npm packages of integration/testdata/node are not installed in %s, or another version of them (run contrib/test/setup-root.sh as root): %v", dir, err)
	}
	return filepath.Join(dir, "node_modules")
}

// runNode runs script with node against d, failing the test unless it
// exits 0 after printing PASS.
func runNode(t *testing.T, d *daemon, script string, env []string, args ...string) {
	t.Helper()
	modules := nodeModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"-"}, args...)...)
	cmd.Stdin = strings.NewReader(nodeCommon + script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"HOME="+t.TempDir(), // no ~/.testcontainers.properties of the user's
		"DOCKER_HOST="+d.Host(),
		"DOCKER_CONFIG="+t.TempDir(),
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\nPASS") {
		t.Fatalf("node: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("%s", out)
}

// dockerode (the Node SDK of VS Code's Docker extension and of
// testcontainers-node) against a fresh daemon: testdata/node/dockerode_check.js
// pulls with followProgress, lists with filters, creates with binds,
// ports, env and labels, attaches (stdin too) and demuxes, waits, reads
// logs (follow, since, tail, timestamps), execs, copies archives both
// ways, reads stats, builds from a tar, uses networks with aliases,
// volumes and events, and prunes.
func TestDockerode(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	runNode(t, d, dockerodeCheck, nil, d.Socket, ref)
}

// testcontainers for Node (the newest release that runs on Debian's node
// 18 too) through DOCKER_HOST, Ryuk disabled: testdata/node/testcontainers_check.js
// waits for logs, ports, HTTP and health checks, execs, copies files and
// content in and archives out, restarts, stops, resolves a network alias
// between containers and builds from a Dockerfile. What it started, its
// stops removed.
func TestTestcontainersNode(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	env := []string{"TESTCONTAINERS_RYUK_DISABLED=true"}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		// testcontainers then takes the bridge network's gateway for
		// the host of published ports, as for a sibling container of a
		// rootful dockerd; hutch publishes in the test's own network
		// namespace, as rootless Docker does.
		env = append(env, "TESTCONTAINERS_HOST_OVERRIDE=localhost")
	}
	runNode(t, d, testcontainersNodeCheck, env, ref)
	for _, args := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q", "--filter", "type=custom"}} {
		if out, err := d.Docker(t, args...); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("docker %s after the script: %v %q", strings.Join(args, " "), err, out)
		}
	}
}
