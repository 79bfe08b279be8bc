//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/storage/testimage"
)

// listeningTCP lists the TCP ports pid listens on.
func listeningTCP(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"tcp", "tcp6"} {
		file, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fs := strings.Fields(s.Text())
			if len(fs) > 9 && fs[3] == "0A" && inodes[fs[9]] {
				out = append(out, fs[1])
			}
		}
		file.Close()
	}
	return out
}

func TestNoTCPListenerByDefault(t *testing.T) {
	d := startDaemon(t)
	for _, p := range append([]int{d.cmd.Process.Pid}, descendants(t, d.cmd.Process.Pid)...) {
		if l := listeningTCP(t, p); len(l) > 0 {
			t.Errorf("pid %d (%v) listens on TCP %v", p, cmdline(p), l)
		}
	}
	// Socket 0600 in a 0700 dir; state and data dirs 0700.
	for path, want := range map[string]os.FileMode{d.Socket: 0o600, filepath.Join(d.Runtime, "hutch"): 0o700, filepath.Join(d.Data, "hutch"): 0o700} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", path, st.Mode().Perm(), err, want)
		}
	}
}

func TestTCPNeedsTLS(t *testing.T) {
	env, _, _ := daemonEnv(t)
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(hutchBin(t), "daemon", "--host", "tcp://"+addr)
	cmd.Env = env
	out, err := runWithTimeout(cmd, 20*time.Second)
	if err == nil || !strings.Contains(out, "--insecure-tcp") || !strings.Contains(out, "--tlscert") {
		t.Errorf("tcp without TLS: %v\n%s", err, out)
	}

	// With TLS and a CA, only clients with a certificate get in.
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil, true)
	newCert(t, dir, "server", ca, caKey, false)
	newCert(t, dir, "client", ca, caKey, false)
	env2, rt, _ := daemonEnv(t)
	sock := filepath.Join(rt, "hutch.sock")
	startDaemonEnv(t, env2, sock, "--host", "unix://"+sock, "--host", "tcp://"+addr,
		"--tlscert", filepath.Join(dir, "server.pem"), "--tlskey", filepath.Join(dir, "server-key.pem"), "--tlscacert", filepath.Join(dir, "ca.pem"))
	docker := func(args ...string) (string, error) {
		c := exec.Command(dockerCLI(t), args...)
		c.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
		b, err := c.CombinedOutput()
		return string(b), err
	}
	out, err = docker("-H", "tcp://"+addr, "--tlsverify", "--tlscacert", filepath.Join(dir, "ca.pem"),
		"--tlscert", filepath.Join(dir, "client.pem"), "--tlskey", filepath.Join(dir, "client-key.pem"), "version", "--format", "{{.Server.Platform.Name}}")
	if err != nil || !strings.HasPrefix(out, "hutch") {
		t.Errorf("docker over TLS: %v\n%s", err, out)
	}
	out, err = docker("-H", "tcp://"+addr, "--tlsverify", "--tlscacert", filepath.Join(dir, "ca.pem"), "version")
	if err == nil {
		t.Errorf("a client without a certificate got in:\n%s", out)
	}
	out, err = docker("-H", "tcp://"+addr, "version")
	if err == nil {
		t.Errorf("a plain-HTTP client got in:\n%s", out)
	}
}

func TestInsecureTCPWhenAsked(t *testing.T) {
	env, rt, _ := daemonEnv(t)
	addr := freeLoopbackAddr(t)
	sock := filepath.Join(rt, "hutch.sock")
	d := startDaemonEnv(t, env, sock, "--host", "unix://"+sock, "--host", "tcp://"+addr, "--insecure-tcp")
	// The log comes through a pipe that the harness copies: a line
	// written before the daemon answered may reach d.Log a moment later.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.Log(), "without TLS"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("no warning about plain TCP in the log")
			break
		}
	}
	c := exec.Command(dockerCLI(t), "-H", "tcp://"+addr, "version", "--format", "{{.Server.Platform.Name}}")
	c.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	if out, err := c.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "hutch") {
		t.Errorf("docker over plain TCP: %v\n%s", err, out)
	}
}

// newCert writes name.pem and name-key.pem, signed by parent (self-signed
// when parent is nil), valid for 127.0.0.1.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "hutch-test-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

var _ = context.Background

// Credentials reach the registry and nothing else: not the daemon's log (at
// debug level), not its state or data files.
func TestCredentialsNeverStored(t *testing.T) {
	const user, password = "alice", "pa55-w0rd-Never-Logged"
	reg := startRegistry(t, user, password)
	pushTo(t, reg.Addr+"/private/busybox:1", user, password)
	d := startDaemon(t, "--log-level", "debug")
	login := exec.Command(dockerCLI(t), "login", reg.Addr, "-u", user, "--password-stdin")
	cfgDir := t.TempDir()
	login.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+cfgDir)
	login.Stdin = strings.NewReader(password)
	if out, err := login.CombinedOutput(); err != nil {
		t.Fatalf("docker login: %v %s", err, out)
	}
	pull := exec.Command(dockerCLI(t), "pull", reg.Addr+"/private/busybox:1")
	pull.Env = login.Env
	if out, err := pull.CombinedOutput(); err != nil {
		t.Fatalf("docker pull with credentials: %v %s", err, out)
	}
	if strings.Contains(d.Log(), password) {
		t.Errorf("the password is in the daemon's log")
	}
	for _, root := range []string{d.Runtime, d.Data} {
		filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || !de.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), password) {
				t.Errorf("the password is stored in %s", p)
			}
			return nil
		})
	}
}

// A container cannot reach the API socket unless it is bind-mounted.
func TestContainerCannotReachSocket(t *testing.T) {
	d, ref := pulled(t)
	out, err := d.Docker(t, "run", "--rm", ref, "ls", d.Socket)
	if err == nil {
		t.Errorf("the socket is visible in a container: %s", out)
	}
	out, err = d.Docker(t, "run", "--rm", "-v", d.Socket+":/hutch.sock", ref, "sh", "-c", "test -S /hutch.sock && echo bound")
	if err != nil || strings.TrimSpace(out) != "bound" {
		t.Errorf("bind-mounted socket: %v %q", err, out)
	}
}

// hutch check warns when the data dir is readable by others.
func TestCheckWarnsReadableDataDir(t *testing.T) {
	env, _, data := daemonEnv(t)
	dir := filepath.Join(data, "hutch")
	os.MkdirAll(dir, 0o755)
	os.Chmod(dir, 0o755)
	cmd := exec.Command(hutchBin(t), "check")
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "other users can read") || !strings.Contains(string(out), "chmod 700 "+dir) {
		t.Errorf("hutch check with a 0755 data dir:\n%s", out)
	}
}

func pushTo(t *testing.T, ref, user, password string) {
	t.Helper()
	img, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	if err := testimage.Push(context.Background(), ref, img, testimage.WithBasicAuth(user, password)); err != nil {
		t.Fatal(err)
	}
}

// What a container sees of the kernel is read-only, as in Docker: /sys
// and every cgroup controller below /sys/fs/cgroup (one recursive bind
// rootless on cgroup v1), and /proc/sys.
func TestContainerKernelInterfacesReadOnly(t *testing.T) {
	d, ref := pulled(t)
	script := `for f in /sys/kernel/x /sys/fs/cgroup/x /proc/sys/kernel/hostname /sys/fs/cgroup/*/x; do (echo hutch > $f) 2>/dev/null && echo "WROTE $f"; done
ls /sys/fs/cgroup | wc -l`
	out := dockerOK(t, d, "run", "--rm", ref, "sh", "-c", script)
	if strings.Contains(out, "WROTE") {
		t.Errorf("a container wrote to the kernel's interfaces:\n%s", out)
	}
	if out == "0" {
		t.Errorf("/sys/fs/cgroup is empty in the container")
	}
}
