//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
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
)

// liveGet fetches url's body (a published httpd), trying again while the
// server is not yet there.
func liveGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	var err error
	for range 50 {
		var resp *http.Response
		if resp, err = c.Get(url); err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			return strings.TrimSpace(string(b)), rerr
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", err
}

// keeperPid is the pid of the daemon's keeper (hutch-ns), 0 when none runs.
func keeperPid(d *daemon) int {
	b, err := os.ReadFile(filepath.Join(d.Runtime, "hutch", "keeper.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// keeperChild is the keeper's namespace child, which holds the namespaces.
func keeperChild(t *testing.T, keeper int) int {
	t.Helper()
	kids := descendants(t, keeper)
	for _, p := range kids {
		if nsOf(p, "user") != nsOf(keeper, "user") {
			return p
		}
	}
	t.Fatalf("the keeper %d has no child in a namespace of its own: %v", keeper, kids)
	return 0
}

// nsOf is process pid's namespace of kind ("user", "mnt"), "" if unknown.
func nsOf(pid int, kind string) string {
	ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
	return ns
}

// waitKeeperGone waits until the keeper pid has exited, and fails the
// test if it has not within limit.
func waitKeeperGone(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the keeper (pid %d) still runs with no container left", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// With live restore, a kill -9 of the engine leaves a container on a user
// network running and reachable on its published port while no engine
// runs; the next daemon adopts it with its network: the port, its name on
// the network, exec.
func TestLiveRestoreKill9(t *testing.T) {
	for _, mode := range []string{"auto", "single"} {
		t.Run("idmap="+mode, func(t *testing.T) { liveRestoreKill9(t, "--idmap="+mode) })
	}
}

func liveRestoreKill9(t *testing.T, idmap string) {
	d, ref := pulled(t, "--live-restore", idmap)
	if got := dockerOK(t, d, "info", "--format", "{{.LiveRestoreEnabled}}"); got != "true" {
		t.Fatalf("LiveRestoreEnabled = %q", got)
	}
	dockerOK(t, d, "network", "create", "keepnet")
	addr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "web", "--network", "keepnet", "-p", addr+":80",
		"--health-cmd", "test -e /www/index.html", "--health-interval", "300ms", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Fatalf("published port before the kill: %q, %v", body, err)
	}
	dockerOK(t, d, "run", "-d", "--name", "side", "--network", "container:web", ref, "sleep", "600")
	keeper := keeperPid(d)
	if keeper == 0 {
		t.Fatalf("no keeper.pid with live restore\n%s", d.Log())
	}

	killDaemons(t, d)
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port while no engine runs: %q, %v", body, err)
	}

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore", idmap)
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}}", "web"); st != "running" {
		t.Errorf("web after the restart: %q, want running\n%s", st, d2.Log())
	}
	if got := keeperPid(d2); got != keeper {
		t.Errorf("keeper pid %d after the restart, want the same %d", got, keeper)
	}
	// Its health probes run again under the new engine.
	restarted := time.Now()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var h struct {
			Status string
			Log    []struct{ Start time.Time }
		}
		if err := json.Unmarshal([]byte(dockerOK(t, d2, "inspect", "--format", "{{json .State.Health}}", "web")), &h); err != nil {
			t.Fatal(err)
		}
		if len(h.Log) > 0 && h.Log[len(h.Log)-1].Start.After(restarted) && h.Status == "healthy" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no health probe of web since the restart: %+v", h)
			break
		}
	}
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port after the restart: %q, %v", body, err)
	}
	out, err := d2.Docker(t, "run", "--rm", "--network", "keepnet", ref, "sh", "-c", "echo -e 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc web 80")
	if !strings.Contains(out, "up") {
		t.Errorf("web by name from a new container: %q, %v\n%s", out, err, d2.Log())
	}
	if out := dockerOK(t, d2, "exec", "web", "cat", "/www/index.html"); out != "up" {
		t.Errorf("exec in the adopted container: %q", out)
	}
	// A container in web's namespace stays there, running.
	if out, err := d2.Docker(t, "exec", "side", "sh", "-c", "echo -e 'GET /index.html HTTP/1.0\r\n\r\n' | nc 127.0.0.1 80"); !strings.Contains(out, "up") {
		t.Errorf("side to web's server on their loopback after the restart: %q, %v", out, err)
	}
	dockerOK(t, d2, "rm", "-f", "side", "web")
	dockerOK(t, d2, "network", "rm", "keepnet")
	d2.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
}

// waitExitFile waits until the shim of container id has recorded its
// exit (exit.json beside its record): the container ended, with no engine
// to tell.
func waitExitFile(t *testing.T, d *daemon, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(d.Data, "hutch", "*", id, "exit.json")); len(m) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exit.json for %s", id)
		}
	}
}

// Through a kill -9 of the engine and then a graceful restart into
// another build of the binaries, containers on a user network and on the
// default bridge stay reachable on their published ports and by name,
// and keep working with the API afterwards (exec, logs, attach, stats,
// wait); a container that ends while no engine runs has its exit code
// recorded.
func TestLiveRestoreNetworksAndUpgrade(t *testing.T) {
	d, ref := pulled(t, "--live-restore")
	dockerOK(t, d, "network", "create", "keepnet")
	userAddr, bridgeAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	serve := func(body string) string {
		return "mkdir -p /www && echo " + body + " > /www/index.html && exec httpd -f -p 80 -h /www"
	}
	dockerOK(t, d, "run", "-d", "--name", "web", "--network", "keepnet", "-p", userAddr+":80", ref, "sh", "-c", serve("user"))
	dockerOK(t, d, "run", "-d", "--name", "bweb", "-p", bridgeAddr+":80", ref, "sh", "-c", serve("bridge"))
	dockerOK(t, d, "run", "-d", "--name", "client", "--network", "keepnet", ref, "sleep", "600")
	dockerOK(t, d, "run", "-d", "-i", "--name", "echoer", ref, "sh", "-c", "read l; echo got $l; exit 3")
	trig := t.TempDir()
	os.Chmod(trig, 0o777)
	exiterID := dockerOK(t, d, "run", "-d", "--name", "exiter", "-v", trig+":/trig", ref,
		"sh", "-c", "until [ -e /trig/go ]; do sleep 0.1; done; exit 7")
	reachable := func(when string) {
		t.Helper()
		if body, err := liveGet("http://" + userAddr + "/index.html"); body != "user" {
			t.Errorf("user network's published port %s: %q, %v", when, body, err)
		}
		if body, err := liveGet("http://" + bridgeAddr + "/index.html"); body != "bridge" {
			t.Errorf("default bridge's published port %s: %q, %v", when, body, err)
		}
	}
	byName := func(dd *daemon, when string) {
		t.Helper()
		get := "for i in $(seq 50); do echo -e 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc web 80 && exit 0; sleep 0.1; done; exit 1"
		if out, err := dd.Docker(t, "exec", "client", "sh", "-c", get); !strings.Contains(out, "user") {
			t.Errorf("web by name from client %s: %q, %v", when, out, err)
		}
		if out, err := dd.Docker(t, "run", "--rm", "--network", "keepnet", ref, "sh", "-c", get); !strings.Contains(out, "user") {
			t.Errorf("web by name from a new container %s: %q, %v", when, out, err)
		}
	}
	// A container that calls the host's loopback (through slirp4netns)
	// every 100 ms: its calls go on while no engine runs.
	calls := make(chan struct{}, 1000)
	hostL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostL.Close()
	go func() {
		for {
			c, err := hostL.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case calls <- struct{}{}:
			default:
			}
		}
	}()
	hostPort := strconv.Itoa(hostL.Addr().(*net.TCPAddr).Port)
	dockerOK(t, d, "run", "-d", "--name", "caller", "--network", "keepnet", "--add-host", "host.docker.internal:host-gateway", ref,
		"sh", "-c", "while true; do nc host.docker.internal "+hostPort+" </dev/null; sleep 0.1; done")
	outbound := func(when string) {
		t.Helper()
		for len(calls) > 0 {
			<-calls
		}
		select {
		case <-calls:
		case <-time.After(30 * time.Second):
			t.Errorf("no call from a container to the host %s", when)
		}
	}
	reachable("before the kill")
	byName(d, "before the kill")
	outbound("before the kill")
	keeper := keeperPid(d)

	killDaemons(t, d)
	reachable("while no engine runs")
	outbound("while no engine runs")
	if err := os.WriteFile(filepath.Join(trig, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitExitFile(t, d, exiterID)

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	state := func(dd *daemon, name string) string {
		return dockerOK(t, dd, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name)
	}
	for _, name := range []string{"web", "bweb", "client", "echoer"} {
		if got := state(d2, name); got != "running 0" {
			t.Errorf("%s after the kill and restart: %q, want running 0", name, got)
		}
	}
	if got := state(d2, "exiter"); got != "exited 7" {
		t.Errorf("exiter, which ended while no engine ran: %q, want exited 7", got)
	}
	reachable("after the restart")
	byName(d2, "after the restart")
	outbound("after the restart")
	if out := dockerOK(t, d2, "stats", "--no-stream", "--format", "{{.Name}}", "web"); out != "web" {
		t.Errorf("stats of an adopted container: %q", out)
	}

	// A graceful stop leaves them running; the next daemon runs from
	// another copy of the binaries, as after an upgrade, under the same
	// keeper.
	d2.Stop()
	if got := keeperPid(d2); got != keeper {
		t.Fatalf("keeper %d after a graceful stop, want %d", got, keeper)
	}
	reachable("after a graceful stop")
	newBuild := t.TempDir()
	for _, b := range []string{"hutch", "hutch-ns", "hutch-keeper", "hutch-shim", "hutch-runtime", "hutch-init"} {
		src, err := os.ReadFile(filepath.Join(filepath.Dir(hutchBin(t)), b))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(newBuild, b), src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(slices.Clone(d.env), "HUTCH_SHIM="+filepath.Join(newBuild, "hutch-shim"))
	d3 := startDaemonCmd(t, env, d.Socket, exec.Command(filepath.Join(newBuild, "hutch"), "daemon", "--live-restore"))
	d3.Runtime, d3.Data = d.Runtime, d.Data
	// The new daemon's process is the engine, in the keeper's namespaces.
	engine := d3.cmd.Process.Pid
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", engine)); filepath.Dir(exe) != newBuild {
		t.Errorf("the engine runs %s, want the new build in %s", exe, newBuild)
	}
	if got, want := nsOf(engine, "user"), nsOf(keeperChild(t, keeper), "user"); got == "" || got != want {
		t.Errorf("the engine's user namespace %q, the keeper's %q", got, want)
	}
	for _, name := range []string{"web", "bweb", "client", "echoer"} {
		if got := state(d3, name); got != "running 0" {
			t.Errorf("%s after the upgrade: %q, want running 0", name, got)
		}
	}
	reachable("after the upgrade")
	byName(d3, "after the upgrade")
	if out := dockerOK(t, d3, "exec", "web", "cat", "/www/index.html"); out != "user" {
		t.Errorf("exec after the upgrade: %q", out)
	}
	attach := exec.Command(dockerCLI(t), "attach", "echoer")
	attach.Env = append(os.Environ(), "DOCKER_HOST="+d3.Host())
	attach.Stdin = strings.NewReader("hello\n")
	out, err := attach.CombinedOutput()
	if !strings.Contains(string(out), "got hello") {
		t.Errorf("attach after the upgrade: %q, %v", out, err)
	}
	if got := dockerOK(t, d3, "wait", "echoer"); got != "3" {
		t.Errorf("wait after the upgrade: %q, want 3", got)
	}
	if got := dockerOK(t, d3, "logs", "echoer"); got != "got hello" {
		t.Errorf("logs after the upgrade: %q", got)
	}
	outbound("after the upgrade")
	dockerOK(t, d3, "rm", "-f", "web", "bweb", "client", "echoer", "exiter", "caller")
	dockerOK(t, d3, "network", "rm", "keepnet")
	d3.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
}

// live-restore false in daemon.json is Docker's default behaviour: /info
// says so, no keeper runs, and the daemon's stop stops the containers.
func TestLiveRestoreOffInDaemonJSON(t *testing.T) {
	ref := busybox(t)
	env, rt, data := daemonEnv(t)
	conf := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(conf, []byte(`{"live-restore": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() *daemon {
		d := startDaemonCmd(t, env, filepath.Join(rt, "hutch.sock"), exec.Command(hutchBin(t), "daemon", "--config-file", conf))
		d.Runtime, d.Data = rt, data
		return d
	}
	d := start()
	if got := dockerOK(t, d, "info", "--format", "{{.LiveRestoreEnabled}}"); got != "false" {
		t.Errorf("LiveRestoreEnabled = %q with live-restore false", got)
	}
	dockerOK(t, d, "pull", "-q", ref)
	dockerOK(t, d, "run", "-d", "--name", "sleeper", "--stop-timeout", "1", ref, "sleep", "600")
	if pid := keeperPid(d); pid != 0 {
		t.Errorf("a keeper (pid %d) runs with live-restore false", pid)
	}
	d.Stop()
	d2 := start()
	if got := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}}", "sleeper"); got != "exited" {
		t.Errorf("sleeper after a stop without live restore: %q, want exited", got)
	}
	dockerOK(t, d2, "rm", "sleeper")
}

// The live-restore tree: the daemon's process is the engine, in the
// keeper's user and mount namespaces and the host's network namespace;
// the keeper is hutch-ns with slirp4netns and its namespace child
// (hutch-ns again, which execs hutch-keeper once the namespaces are set
// up); only the engine holds the instance lock. With no container left,
// a stop leaves no process behind.
func TestLiveRestoreProcessTree(t *testing.T) {
	d, ref := pulled(t, "--live-restore")
	dockerOK(t, d, "run", "-d", "--name", "sleeper", ref, "sleep", "600")
	engine := d.cmd.Process.Pid
	if args := cmdline(engine); len(args) < 2 || filepath.Base(args[0]) != "hutch" || args[1] != "daemon" {
		t.Errorf("the daemon's process runs %q, want hutch daemon", args)
	}
	keeper := keeperPid(d)
	if args := cmdline(keeper); len(args) < 2 || filepath.Base(args[0]) != "hutch-ns" || args[1] != "keeper" {
		t.Errorf("the keeper runs %q, want hutch-ns keeper", args)
	}
	inner := keeperChild(t, keeper)
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", inner)); filepath.Base(exe) != "hutch-keeper" {
		t.Errorf("the keeper's namespace child runs %s, want hutch-keeper", exe)
	}
	var kids []string
	for _, c := range children(t, keeper) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c)); err == nil {
			kids = append(kids, filepath.Base(exe))
		}
	}
	slices.Sort(kids)
	if !slices.Equal(kids, []string{"hutch-keeper", "slirp4netns"}) {
		t.Errorf("the keeper's children: %v, want hutch-keeper and slirp4netns", kids)
	}
	for _, kind := range []string{"user", "mnt"} {
		if got, want := nsOf(engine, kind), nsOf(inner, kind); got == "" || got != want {
			t.Errorf("the engine's %s namespace %q, the keeper's %q", kind, got, want)
		}
	}
	if got, want := nsOf(engine, "net"), nsOf(os.Getpid(), "net"); got != want {
		t.Errorf("the engine's network namespace %q, want the host's %q", got, want)
	}
	lock := filepath.Join(d.Runtime, "hutch", "hutch.lock")
	all := append([]int{engine, keeper}, descendants(t, engine)...)
	all = append(all, descendants(t, keeper)...)
	for _, p := range all {
		if holds := holdsFile(p, lock); holds != (p == engine) {
			t.Errorf("pid %d (%v) holds %s: %v", p, cmdline(p), lock, holds)
		}
	}
	dockerOK(t, d, "rm", "-f", "sleeper")
	d.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
	if _, err := os.Stat(filepath.Join(d.Runtime, "hutch", "hutch.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file after the stop: %v", err)
	}
}

// A keeper killed with -9 takes the namespaces along: the running engine
// says so, and the next daemon makes new ones and stops the containers
// whose network went with the old (as without live restore); a start
// brings them back on their published port.
func TestLiveRestoreKeeperKilled(t *testing.T) {
	d, ref := pulled(t, "--live-restore")
	addr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "web", "--stop-timeout", "1", "-p", addr+":80", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Fatalf("published port: %q, %v", body, err)
	}
	keeper := keeperPid(d)
	inner := keeperChild(t, keeper)
	syscall.Kill(keeper, syscall.SIGKILL)
	// The keeper is the first engine's child, which does not reap it: a
	// zombie is dead enough.
	for _, p := range []int{keeper, inner} {
		for deadline := time.Now().Add(10 * time.Second); alive(p); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still runs after the keeper's kill", p)
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(d.Log(), "the keeper of the namespaces is gone"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the engine did not say its keeper is gone:\n%s", d.Log())
			break
		}
	}
	killDaemons(t, d)

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if got := keeperPid(d2); got == 0 || got == keeper {
		t.Errorf("keeper after the restart: %d (the killed one was %d)", got, keeper)
	}
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "web"); st != "exited 137" {
		t.Errorf("web after its namespaces went: %q, want exited 137", st)
	}
	dockerOK(t, d2, "start", "web")
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port after the start: %q, %v", body, err)
	}
	newKeeper := keeperPid(d2)
	dockerOK(t, d2, "rm", "-f", "web")
	d2.Stop()
	waitKeeperGone(t, newKeeper, 15*time.Second)
}

// A daemon started without live restore after one with it adopts the
// containers that one left running, with their network, and stops them
// when it stops: then no keeper is left.
func TestLiveRestoreTurnedOff(t *testing.T) {
	d, ref := pulled(t, "--live-restore")
	addr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "web", "--stop-timeout", "1", "-p", addr+":80", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	keeper := keeperPid(d)
	d.Stop()

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore=false")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if got := dockerOK(t, d2, "info", "--format", "{{.LiveRestoreEnabled}}"); got != "false" {
		t.Errorf("LiveRestoreEnabled = %q", got)
	}
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}}", "web"); st != "running" {
		t.Errorf("web under the daemon without live restore: %q, want running (adopted)", st)
	}
	if body, err := liveGet("http://" + addr + "/index.html"); body != "up" {
		t.Errorf("published port: %q, %v", body, err)
	}
	d2.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
	d3 := startDaemonEnv(t, d.env, d.Socket, "--live-restore=false")
	if st := dockerOK(t, d3, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "web"); st != "exited 137" {
		t.Errorf("web after a stop without live restore: %q, want exited 137", st)
	}
	dockerOK(t, d3, "rm", "web")
}

// Without slirp4netns (--network=none) the keeper holds the user and
// mount namespaces alone: a container survives a kill -9 of the engine
// and is adopted, controllable, by the next daemon.
func TestLiveRestoreWithoutNetwork(t *testing.T) {
	d, ref := pulled(t, "--live-restore", "--network=none")
	dockerOK(t, d, "run", "-d", "--name", "sleeper", ref, "sleep", "600")
	keeper := keeperPid(d)
	if kids := children(t, keeper); len(kids) != 1 {
		t.Errorf("the keeper's children without a network: %v, want its namespace child alone", kids)
	}
	killDaemons(t, d)
	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore", "--network=none")
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}}", "sleeper"); st != "running" {
		t.Errorf("sleeper after the restart: %q, want running", st)
	}
	if out := dockerOK(t, d2, "exec", "sleeper", "echo", "adopted"); out != "adopted" {
		t.Errorf("exec after the restart: %q", out)
	}
	dockerOK(t, d2, "stop", "-t", "1", "sleeper")
	if got := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "sleeper"); got != "exited 137" {
		t.Errorf("sleeper after docker stop: %q", got)
	}
	dockerOK(t, d2, "rm", "sleeper")
	d2.Stop()
	waitKeeperGone(t, keeper, 15*time.Second)
}
