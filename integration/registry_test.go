//go:build integration

package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// registry is Debian's docker-registry (distribution 2.8) on loopback.
type registry struct {
	Addr     string // 127.0.0.1:port
	User     string // "" without auth
	Password string

	bin, cfgPath string
	cmd          *exec.Cmd
	log          *syncBuffer
}

// startRegistry runs a real docker-registry on a free loopback port, with
// htpasswd auth when user is not empty. It stops when the test ends.
func startRegistry(t testing.TB, user, password string) *registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Fatalf("docker-registry is not installed (make test installs the Debian package): %v", err)
	}
	dir := t.TempDir()
	r := &registry{Addr: freeLoopbackAddr(t), User: user, Password: password}
	auth := ""
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: hutch-test\n    path: %s\n", htpasswd)
	}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n  secret: hutch-test-secret\n%s",
		filepath.Join(dir, "data"), r.Addr, auth)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.bin, r.cfgPath = bin, cfgPath
	t.Cleanup(r.Kill)
	r.start(t)
	return r
}

// start runs the registry process and waits until it answers.
func (r *registry) start(t testing.TB) {
	t.Helper()
	r.cmd = exec.Command(r.bin, "serve", r.cfgPath)
	r.log = &syncBuffer{}
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry did not come up on %s: %v\n%s", r.Addr, err, r.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the registry with SIGKILL, as a registry dying, and waits
// for it to be gone.
func (r *registry) Kill() {
	if r.cmd != nil && r.cmd.ProcessState == nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// Restart starts a killed registry again on the same address, with the
// same storage.
func (r *registry) Restart(t testing.TB) {
	t.Helper()
	r.Kill()
	r.start(t)
}

func freeLoopbackAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
