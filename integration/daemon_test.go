//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

func TestDaemonServesUserSocket(t *testing.T) {
	d := startDaemon(t)
	st, err := os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, want a socket with 0600", d.Socket, st.Mode())
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
		t.Errorf("socket owned by uid %d, want %d", uid, os.Getuid())
	}
	state := filepath.Join(d.Runtime, "hutch")
	if st, err := os.Stat(state); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir %s: %v %v, want 0700", state, st.Mode(), err)
	}
	pid, err := os.ReadFile(filepath.Join(state, "hutch.pid"))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(d.cmd.Process.Pid) {
		t.Errorf("pid file holds %q (%v), want %d", pid, err, d.cmd.Process.Pid)
	}
}

func TestSDKPingVersionInfo(t *testing.T) {
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()
	ping, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		t.Fatal(err)
	}
	if ping.APIVersion != "1.56" || ping.OSType != "linux" {
		t.Errorf("ping = %+v", ping)
	}
	if v := c.ClientVersion(); v != "1.56" {
		t.Errorf("negotiated version %q, want 1.56", v)
	}
	ver, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ver.Platform.Name, "hutch") || ver.APIVersion != "1.56" || ver.MinAPIVersion != "1.24" || ver.Os != "linux" {
		t.Errorf("version = %+v", ver)
	}
	res, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info := res.Info
	if !contains(info.SecurityOptions, "name=rootless") {
		t.Errorf("SecurityOptions %v lack name=rootless", info.SecurityOptions)
	}
	if info.ID == "" || info.Name == "" || info.KernelVersion == "" || info.OperatingSystem == "" || info.NCPU < 1 || info.MemTotal <= 0 {
		t.Errorf("info is missing host facts: %+v", info)
	}
	if info.DockerRootDir != filepath.Join(d.Data, "hutch") {
		t.Errorf("DockerRootDir %q, want %q", info.DockerRootDir, filepath.Join(d.Data, "hutch"))
	}
	if info.CgroupVersion == "" || info.CgroupDriver == "" || info.ServerVersion == "" {
		t.Errorf("cgroup/server facts missing: %q %q %q", info.CgroupVersion, info.CgroupDriver, info.ServerVersion)
	}
	if info.CgroupVersion == "1" && !anyContains(info.Warnings, "cgroup v1") {
		t.Errorf("cgroup v1 host but no warning about resource limits in %q", info.Warnings)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func anyContains(list []string, sub string) bool {
	for _, x := range list {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

func TestDockerCLIVersionAndInfo(t *testing.T) {
	d := startDaemon(t)
	out, err := d.Docker(t, "version", "--format", "{{.Server.Platform.Name}}|{{.Server.APIVersion}}|{{.Server.Os}}")
	if err != nil {
		t.Fatalf("docker version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "hutch") || !strings.Contains(out, "|linux") {
		t.Errorf("docker version server = %q", out)
	}
	out, err = d.Docker(t, "info", "--format", "{{json .SecurityOptions}}")
	if err != nil {
		t.Fatalf("docker info: %v\n%s", err, out)
	}
	if !strings.Contains(out, "name=rootless") {
		t.Errorf("docker info security options = %s", out)
	}
	// The plain `docker info` must render without errors too.
	if out, err := d.Docker(t, "info"); err != nil || !strings.Contains(out, "rootless") {
		t.Errorf("docker info: %v\n%s", err, out)
	}
}

func TestCurlPingAnyHost(t *testing.T) {
	d := startDaemon(t)
	out, err := exec.Command("curl", "-sS", "--unix-socket", d.Socket, "http://anything/_ping").CombinedOutput()
	if err != nil || string(out) != "OK" {
		t.Errorf("curl /_ping = %q, %v", out, err)
	}
	code, hdr, body := d.rawRequest(t, http.MethodHead, "/_ping", "some.other.host:1234")
	if code != 200 || body != "" || hdr.Get("API-Version") != "1.56" || hdr.Get("OSType") != "linux" ||
		hdr.Get("Docker-Experimental") == "" || hdr.Get("Builder-Version") == "" {
		t.Errorf("HEAD /_ping = %d %q %v", code, body, hdr)
	}
}

func TestAPIVersionsAndErrors(t *testing.T) {
	d := startDaemon(t)
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/version", 200, `"ApiVersion":"1.56"`},
		{"GET", "/v1.24/version", 200, `"ApiVersion"`},
		{"GET", "/v1.41/info", 200, `"name=rootless"`},
		{"GET", "/v1.56/_ping", 200, "OK"},
		{"GET", "/v1.23/version", 400, "client version 1.23 is too old. Minimum supported API version is 1.24"},
		{"GET", "/v1.99/version", 400, "client version 1.99 is too new. Maximum supported API version is 1.56"},
		{"GET", "/no/such/route", 404, `{"message":"page not found"}`},
		{"GET", "/v1.41/containers/x/y/z", 404, `"message"`},
		{"DELETE", "/version", 404, `"message"`},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			code, hdr, body := d.rawRequest(t, tc.method, tc.path, "")
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s %s = %d %q, want %d containing %q", tc.method, tc.path, code, body, tc.code, tc.body)
			}
			if code >= 400 && code != 400 || strings.Contains(tc.body, "message") {
				var m map[string]any
				if err := json.Unmarshal([]byte(body), &m); err != nil || m["message"] == nil {
					t.Errorf("error body %q is not Docker's {\"message\": …} (%s)", body, hdr.Get("Content-Type"))
				}
			}
		})
	}
	// Request lines Go's client will not even send.
	for line, want := range map[string]int{
		"GET /%zz HTTP/1.1":                    400,
		"BREW /_ping HTTP/1.1":                 404,
		"GET /_ping HTTP/9.9":                  505,
		"GET /v1.41/../../etc/passwd HTTP/1.1": 307, // net/http cleans the path and redirects
	} {
		if code := rawStatus(t, d.Socket, line); code != want {
			t.Errorf("%q answered %d, want %d", line, code, want)
		}
	}
	// The daemon survived all of it.
	if code, _, _ := d.rawRequest(t, "GET", "/_ping", ""); code != 200 {
		t.Fatalf("daemon stopped answering")
	}
}

// The engine runs as uid 0 of a user namespace mapped onto the user, and
// stays in the host's network namespace.
func TestEngineInUserNamespace(t *testing.T) {
	d := startDaemon(t)
	engine := enginePID(t, d)
	uidMap := strings.Fields(readProc(t, engine, "uid_map"))
	if len(uidMap) < 3 || uidMap[0] != "0" || uidMap[1] != strconv.Itoa(os.Getuid()) || uidMap[2] != "1" {
		t.Errorf("engine uid_map = %v, want 0 %d 1 first", uidMap, os.Getuid())
	}
	if len(uidMap) < 6 {
		t.Errorf("engine uid_map %v has no subuid range (test user has one)", uidMap)
	}
	self, _ := os.Readlink("/proc/self/ns/user")
	theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", engine))
	if self == theirs {
		t.Errorf("engine shares the test's user namespace %s", self)
	}
	selfNet, _ := os.Readlink("/proc/self/ns/net")
	theirNet, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", engine))
	if selfNet != theirNet {
		t.Errorf("engine network namespace %s, want the host's %s (detached netns)", theirNet, selfNet)
	}
	status := readProc(t, engine, "status")
	if !strings.Contains(status, fmt.Sprintf("Uid:\t%d\t", os.Getuid())) {
		t.Errorf("engine does not run as the user seen from the host:\n%s", status)
	}
	// slirp4netns serves the detached network namespace.
	if !processRunning(t, d, "slirp4netns") {
		t.Errorf("no slirp4netns below the daemon")
	}
}

// enginePID finds the engine: the hutch process below the daemon's host
// process (hutch-ns) that serves the API.
func enginePID(t testing.TB, d *daemon) int {
	t.Helper()
	// With live restore the daemon's process is the engine itself, in the
	// keeper's namespaces.
	for _, p := range append([]int{d.cmd.Process.Pid}, descendants(t, d.cmd.Process.Pid)...) {
		if args := cmdline(p); len(args) > 1 && filepath.Base(args[0]) == "hutch" && args[1] == "daemon" {
			return p
		}
	}
	t.Fatalf("no engine below pid %d", d.cmd.Process.Pid)
	return 0
}

// The rootless tree is the host process (hutch-ns, exec'd by `hutch
// daemon` with its pid), the engine as the namespace child, and
// slirp4netns; only the host holds the instance lock.
func TestDaemonProcessTree(t *testing.T) {
	d := startDaemon(t)
	host := d.cmd.Process.Pid
	if args := cmdline(host); len(args) < 2 || filepath.Base(args[0]) != "hutch-ns" || args[1] != "daemon" {
		t.Errorf("host process runs %q, want hutch-ns daemon", args)
	}
	engine := enginePID(t, d)
	var names []string
	for _, c := range children(t, host) {
		if args := cmdline(c); len(args) > 0 {
			names = append(names, filepath.Base(args[0]))
		}
	}
	if len(names) != 2 || !contains(names, "hutch") || !contains(names, "slirp4netns") {
		t.Errorf("children of the host: %v, want the engine (hutch) and slirp4netns", names)
	}
	if got := descendants(t, engine); len(got) != 0 {
		t.Errorf("idle engine has children %v", got)
	}
	lock := filepath.Join(d.Runtime, "hutch", "hutch.lock")
	for _, p := range append([]int{host}, descendants(t, host)...) {
		if holds := holdsFile(p, lock); holds != (p == host) {
			t.Errorf("pid %d (%v) holds %s: %v", p, cmdline(p), lock, holds)
		}
	}
}

// holdsFile reports whether pid has path open.
func holdsFile(pid int, path string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}

// kill -9 of the host process alone takes the engine and slirp4netns with
// it (parent-death signals), and the lock dies with it: a new daemon
// starts.
func TestKillHostTakesTree(t *testing.T) {
	for _, mode := range []string{"auto", "single"} {
		t.Run(mode, func(t *testing.T) {
			d := startDaemon(t, "--idmap="+mode)
			tree := descendants(t, d.cmd.Process.Pid)
			syscall.Kill(d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
			waitGone(t, tree)
			for _, p := range tree {
				if syscall.Kill(p, 0) == nil {
					t.Errorf("pid %d (%v) outlived the host process", p, cmdline(p))
				}
			}
			d2 := startDaemonEnv(t, d.env, d.Socket, "--idmap="+mode)
			if code, _, _ := d2.rawRequest(t, "GET", "/_ping", ""); code != 200 {
				t.Errorf("restarted daemon /_ping = %d", code)
			}
		})
	}
}

func processRunning(t testing.TB, d *daemon, name string) bool {
	for _, p := range descendants(t, d.cmd.Process.Pid) {
		if args := cmdline(p); len(args) > 0 && filepath.Base(args[0]) == name {
			return true
		}
	}
	return false
}

func TestSecondInstanceRefused(t *testing.T) {
	d := startDaemon(t)
	cmd := exec.Command(hutchBin(t), "daemon")
	cmd.Env = d.env
	out, err := runWithTimeout(cmd, 20*time.Second)
	if err == nil {
		t.Fatalf("second daemon started:\n%s", out)
	}
	want := fmt.Sprintf("already running (pid %d), serving unix://%s", d.cmd.Process.Pid, d.Socket)
	if !strings.Contains(out, want) {
		t.Errorf("second start said %q, want it to contain %q", out, want)
	}
	if strings.Contains(out, "goroutine ") {
		t.Errorf("stack trace in output:\n%s", out)
	}
	// The first one is unharmed.
	if code, _, _ := d.rawRequest(t, "GET", "/_ping", ""); code != 200 {
		t.Errorf("first daemon stopped answering")
	}
}

func runWithTimeout(cmd *exec.Cmd, limit time.Duration) (string, error) {
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return buf.String(), err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return buf.String(), fmt.Errorf("timed out after %v", limit)
	}
}

func TestCleanStopRemovesSocketAndPid(t *testing.T) {
	d := startDaemon(t)
	d.Stop()
	if d.waitErr != nil {
		t.Fatalf("exit after SIGTERM: %v", d.waitErr)
	}
	for _, p := range []string{d.Socket, filepath.Join(d.Runtime, "hutch", "hutch.pid")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists after a clean stop (%v)", p, err)
		}
	}
	if left := descendants(t, d.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// A daemon killed with -9 leaves its socket and pid file behind; the next
// start must see they are stale and replace them.
func TestStaleSocketAndPidReplaced(t *testing.T) {
	d := startDaemon(t)
	tree := append([]int{d.cmd.Process.Pid}, descendants(t, d.cmd.Process.Pid)...)
	for _, p := range tree {
		syscall.Kill(p, syscall.SIGKILL)
	}
	<-d.done
	waitGone(t, tree)
	if _, err := os.Stat(d.Socket); err != nil {
		t.Fatalf("expected a stale socket after kill -9: %v", err)
	}
	d2 := startDaemonEnv(t, d.env, d.Socket)
	if code, _, body := d2.rawRequest(t, "GET", "/_ping", ""); code != 200 || body != "OK" {
		t.Errorf("restarted daemon /_ping = %d %q", code, body)
	}
	pid, _ := os.ReadFile(filepath.Join(d.Runtime, "hutch", "hutch.pid"))
	if strings.TrimSpace(string(pid)) != strconv.Itoa(d2.cmd.Process.Pid) {
		t.Errorf("pid file %q not replaced with %d", pid, d2.cmd.Process.Pid)
	}
}

func waitGone(t testing.TB, pids []int) {
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Without XDG_RUNTIME_DIR the socket goes where docs/design.md (Contract) says, and the log
// says which fallback was used.
func TestNoXDGRuntimeDir(t *testing.T) {
	env, _, _ := daemonEnv(t)
	tmp := t.TempDir()
	var kept []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") || strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		kept = append(kept, kv)
	}
	kept = append(kept, "TMPDIR="+tmp)
	runUser := fmt.Sprintf("/run/user/%d", os.Getuid())
	socket := filepath.Join(tmp, fmt.Sprintf("hutch-%d", os.Getuid()), "hutch.sock")
	if st, err := os.Stat(runUser); err == nil && st.IsDir() && int(st.Sys().(*syscall.Stat_t).Uid) == os.Getuid() {
		socket = filepath.Join(runUser, "hutch.sock")
	}
	d := startDaemonEnv(t, kept, socket)
	if !strings.Contains(d.Log(), filepath.Dir(socket)) {
		t.Errorf("log does not say which runtime dir was used:\n%s", d.Log())
	}
	out, err := d.Hutch(t, "env")
	if err != nil || strings.TrimSpace(out) != "export DOCKER_HOST=unix://"+socket {
		t.Errorf("hutch env = %q, %v; want export DOCKER_HOST=unix://%s", out, err, socket)
	}
	if filepath.Dir(socket) != runUser {
		st, err := os.Stat(filepath.Dir(socket))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("fallback dir mode %v, %v; want 0700", st.Mode(), err)
		}
	}
}

func TestSingleUIDMode(t *testing.T) {
	d := startDaemon(t, "--idmap=single")
	uidMap := strings.Fields(readProc(t, enginePID(t, d), "uid_map"))
	if len(uidMap) != 3 || uidMap[0] != "0" || uidMap[1] != strconv.Itoa(os.Getuid()) || uidMap[2] != "1" {
		t.Errorf("single-UID engine uid_map = %v, want exactly 0 %d 1", uidMap, os.Getuid())
	}
	if !strings.Contains(d.Log(), "single-UID mode") {
		t.Errorf("no loud warning in the log:\n%s", d.Log())
	}
	res, err := d.Client(t).Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(res.Info.Warnings, "single-UID mode") {
		t.Errorf("/info Warnings %q lack the single-UID warning", res.Info.Warnings)
	}
}

func TestHutchCheckReportsEveryRequirement(t *testing.T) {
	env, _, _ := daemonEnv(t)
	cmd := exec.Command(hutchBin(t), "check")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hutch check failed on a prepared machine: %v\n%s", err, out)
	}
	for _, item := range []string{"newuidmap", "newgidmap", "subuid", "subgid", "user namespaces", "/dev/net/tun", "slirp4netns", "overlay", "cgroup", "XDG_RUNTIME_DIR"} {
		if !strings.Contains(string(out), item) {
			t.Errorf("hutch check does not report %q:\n%s", item, out)
		}
	}
}

// A missing prerequisite the user asked for by name stops the daemon with
// one clear sentence and leaves nothing behind. (Without --network the
// daemon starts without networking instead: TestWithoutSlirp4netns.)
func TestMissingSlirp4netnsRefused(t *testing.T) {
	env, rt, _ := daemonEnv(t)
	bin := t.TempDir()
	for _, tool := range []string{"newuidmap", "newgidmap", "nsenter", "mount", "umount", "ip", "unshare", "sh"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + bin
		}
	}
	cmd := exec.Command(hutchBin(t), "daemon", "--network=slirp4netns")
	cmd.Env = env
	out, err := runWithTimeout(cmd, 20*time.Second)
	if err == nil {
		t.Fatalf("daemon --network=slirp4netns started without slirp4netns:\n%s", out)
	}
	if !strings.Contains(out, "slirp4netns") || !strings.Contains(out, "apt-get install slirp4netns") || strings.Contains(out, "goroutine ") {
		t.Errorf("refusal is not one clear sentence with the fix:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(rt, "hutch.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left behind after refusal: %v", err)
	}
}

// Without newuidmap/newgidmap (an unprivileged pod) the daemon falls back
// to single-UID mode by itself, says so loudly, and still runs containers.
func TestSingleUIDWithoutNewuidmap(t *testing.T) {
	ref := busybox(t)
	env, rt, _ := daemonEnv(t)
	pathWithout(t, env, "newuidmap", "newgidmap")
	check := exec.Command(hutchBin(t), "check")
	check.Env = env
	out, _ := check.CombinedOutput()
	if !strings.Contains(string(out), "missing  newuidmap") || !strings.Contains(string(out), "apt-get install uidmap") {
		t.Errorf("hutch check without newuidmap:\n%s", out)
	}
	d := startDaemonEnv(t, env, filepath.Join(rt, "hutch.sock"))
	if !strings.Contains(d.Log(), "single-UID mode") {
		t.Errorf("no loud warning in the log:\n%s", d.Log())
	}
	uidMap := strings.Fields(readProc(t, enginePID(t, d), "uid_map"))
	if len(uidMap) != 3 || uidMap[1] != strconv.Itoa(os.Getuid()) {
		t.Errorf("uid_map %v, want only the user's uid", uidMap)
	}
	if out, err := d.Docker(t, "info", "--format", "{{json .Warnings}}"); err != nil || !strings.Contains(out, "single-UID mode") {
		t.Errorf("/info Warnings: %v %s", err, out)
	}
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("pull in single-UID mode: %v %s", err, out)
	}
	// Files of other owners (uid 1234 in the image) are extracted as root.
	out2, err := d.Docker(t, "run", "--rm", ref, "stat", "-c", "%u", "/home/user")
	if err != nil || strings.TrimSpace(out2) != "0" {
		t.Errorf("single-UID run: %v %q", err, out2)
	}
}

// A daemon stopped as soon as it answers exits cleanly: the port driver's
// hand-shake between the namespaces may not have ended yet (it failed with
// EOF and exit status 1 once in a few dozen stops).
func TestQuickStopExitsCleanly(t *testing.T) {
	for i := 0; i < 15; i++ {
		d := startDaemon(t)
		d.Stop() // fails the test unless the daemon exits 0
		if t.Failed() {
			t.Fatalf("stop %d", i+1)
		}
	}
}

// pathWithout sets env's PATH to one directory of links to every program
// of the usual PATH but the ones named: a machine without them installed.
func pathWithout(t *testing.T, env []string, names ...string) {
	t.Helper()
	bin := t.TempDir()
	for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if slices.Contains(names, e.Name()) {
				continue
			}
			os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + bin
		}
	}
}
