//go:build integration && rootmode

package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// As real root the engine runs in the process systemd started, and takes
// the socket itself; idle exit and the next start work as rootless.
func TestRootModeSocketActivation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the rootmode tests must run as root (make test builds them only then)")
	}
	a := activate(t, "--data-root", t.TempDir(), "--idle-exit", "2s")
	for i := 1; i <= 2; i++ {
		if out, err := a.docker(t, "version", "--format", "{{.Server.Version}}"); err != nil {
			t.Fatalf("docker version, start %d: %v\n%s\n--- daemon log ---\n%s", i, err, out, a.log.String())
		}
		if n := a.Starts(); n != i {
			t.Fatalf("%d starts, want %d", n, i)
		}
		a.waitExit(time.Minute)
	}
	log := a.log.String()
	if !strings.Contains(log, "activated=true") || !strings.Contains(log, "idmap=none") {
		t.Errorf("the root daemon did not serve systemd's socket itself:\n%s", log)
	}
	if _, err := os.Stat(a.Socket); err != nil {
		t.Errorf("the daemon removed systemd's socket: %v", err)
	}
}
