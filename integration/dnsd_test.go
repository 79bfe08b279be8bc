//go:build integration

package integration

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed testdata/dnsd/main.go
var dnsdSource []byte

var dnsd struct {
	once sync.Once
	path string
	err  error
}

// dnsdBinary builds testdata/dnsd once per run, static, and returns its
// path, for tests to bind-mount into a container as a DNS server on port
// 53 of the container's namespace. It uses the standard library alone:
// the build needs the go command (in PATH, or /usr/local/go/bin where
// the test user's PATH does not reach) and a build cache, but no module
// download.
func dnsdBinary(t *testing.T) string {
	t.Helper()
	dnsd.once.Do(func() { dnsd.path, dnsd.err = buildDnsd() })
	if dnsd.err != nil {
		t.Fatal(dnsd.err)
	}
	return dnsd.path
}

func buildDnsd() (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = "/usr/local/go/bin/go"
		if _, err := os.Stat(goCmd); err != nil {
			return "", fmt.Errorf("building the test DNS server (testdata/dnsd) needs the go command in PATH or at %s: %w", goCmd, err)
		}
	}
	dir, err := mkdirTempShared()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), dnsdSource, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module dnsd\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(goCmd, "build", "-trimpath", "-o", "dnsd", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=", "GOWORK=off")
	// Go's default cache is under the user's cache directory; a user
	// without a writable one gets a cache for this run.
	if cache, err := os.UserCacheDir(); os.Getenv("GOCACHE") == "" && (err != nil || os.MkdirAll(filepath.Join(cache, "go-build"), 0o755) != nil) {
		cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(dir, "gocache"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the test DNS server (testdata/dnsd): %v\n%s", err, out)
	}
	return filepath.Join(dir, "dnsd"), nil
}
