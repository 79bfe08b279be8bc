//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// The Engine API's basic flow with a plain HTTP client: pull, create, start, wait,
// logs, list, stop.
func TestRawHTTPFlow(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	hc := unixHTTPClient(d.Socket)
	hc.Timeout = 2 * time.Minute
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://anything/v1.41"+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("POST", "/images/create?fromImage="+url.QueryEscape(ref), "")
	if code != 200 || !strings.Contains(body, `"status":"Pulling from library/busybox","id":"latest"`) || !strings.Contains(body, "Status: Downloaded newer image for") {
		t.Fatalf("pull = %d\n%s", code, body)
	}
	code, body = do("POST", "/containers/create", `{"Image":"`+ref+`","Cmd":["echo","hello"],"Tty":false}`)
	if code != 201 || !strings.Contains(body, `"Warnings":null`) {
		t.Fatalf("create = %d %s", code, body)
	}
	var created struct{ Id string }
	json.Unmarshal([]byte(body), &created)
	if len(created.Id) != 64 {
		t.Fatalf("create id %q", created.Id)
	}
	short := created.Id[:12]
	if code, body = do("POST", "/containers/"+short+"/start", ""); code != 204 {
		t.Fatalf("start = %d %s", code, body)
	}
	code, body = do("POST", "/containers/"+short+"/wait", "")
	if code != 200 || !strings.Contains(body, `"StatusCode":0`) {
		t.Fatalf("wait = %d %s\n%s", code, body, d.Log())
	}
	code, body = do("GET", "/containers/"+short+"/logs?stdout=1", "")
	if code != 200 || !strings.Contains(body, "hello") {
		t.Fatalf("logs = %d %q", code, body)
	}
	code, body = do("GET", "/containers/json", "")
	if code != 200 || strings.Contains(body, created.Id) {
		t.Errorf("list of running containers = %d %s (the exited one must not be listed)", code, body)
	}
	code, body = do("GET", "/containers/json?all=1", "")
	if code != 200 || !strings.Contains(body, created.Id) || !strings.Contains(body, `"Names":["/`) {
		t.Errorf("list all = %d %s", code, body)
	}
	if code, _ = do("POST", "/containers/"+short+"/start", ""); code != 204 {
		t.Errorf("restart of an exited container = %d", code)
	}
	do("POST", "/containers/"+short+"/wait", "")
	if code, _ = do("POST", "/containers/"+short+"/stop", ""); code != 304 {
		t.Errorf("stop of a stopped container = %d, want 304", code)
	}
	if code, body = do("DELETE", "/containers/"+short, ""); code != 204 {
		t.Errorf("delete = %d %s", code, body)
	}
	if code, _ = do("GET", "/containers/"+short+"/json", ""); code != 404 {
		t.Errorf("inspect after delete = %d", code)
	}
}

func TestDockerRunForeground(t *testing.T) {
	d, ref := pulled(t)
	out, err := d.Docker(t, "run", "--rm", ref, "echo", "hello from hutch")
	if err != nil || strings.TrimSpace(out) != "hello from hutch" {
		t.Fatalf("docker run = %q, %v\n%s", out, err, d.Log())
	}
	// Exit codes propagate.
	_, err = d.Docker(t, "run", "--rm", ref, "sh", "-c", "exit 3")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("docker run exit 3 = %v", err)
	}
	// stdout and stderr stay separate.
	cmd := exec.Command(dockerCLI(t), "run", "--rm", ref, "sh", "-c", "echo out; echo err >&2")
	cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+d.Host())
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil || so.String() != "out\n" || se.String() != "err\n" {
		t.Errorf("stdout %q stderr %q err %v", so.String(), se.String(), err)
	}
	// --rm removed them all.
	if out, _ := d.Docker(t, "ps", "-aq"); strings.TrimSpace(out) != "" {
		t.Errorf("--rm left containers: %q", out)
	}
	// A missing command is a clear error with Docker's exit code.
	out, err = d.Docker(t, "run", "--rm", ref, "no-such-command")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 127 || !strings.Contains(out, "executable file not found") {
		t.Errorf("missing command: %v\n%s", err, out)
	}
}

func TestDockerLifecycle(t *testing.T) {
	d, ref := pulled(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := d.Docker(t, args...)
		if err != nil {
			t.Fatalf("docker %v: %v\n%s\n--- daemon ---\n%s", args, err, out, d.Log())
		}
		return strings.TrimSpace(out)
	}
	id := run("run", "-d", "--name", "web", ref, "sh", "-c", "echo started; trap 'echo bye; exit 0' TERM; while true; do sleep 0.1; done")
	if len(id) != 64 {
		t.Fatalf("run -d printed %q", id)
	}
	if ps := run("ps", "--format", "{{.Names}} {{.Status}}"); !strings.HasPrefix(ps, "web Up") {
		t.Errorf("ps = %q", ps)
	}
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", "web"); return strings.Contains(out, "started") })
	if top := run("top", "web"); !strings.Contains(top, "PID") || !strings.Contains(top, "sh -c") {
		t.Errorf("top = %q", top)
	}
	if st := run("inspect", "--format", "{{.State.Status}} {{.State.Running}} {{.Name}}", id[:8]); st != "running true /web" {
		t.Errorf("inspect = %q", st)
	}
	run("stop", "web")
	if st := run("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "web"); st != "exited 0" {
		t.Errorf("after stop: %q", st)
	}
	if logs := run("logs", "web"); logs != "started\nbye" {
		t.Errorf("logs = %q", logs)
	}
	run("start", "web")
	run("restart", "-t", "1", "web")
	if st := run("inspect", "--format", "{{.State.Status}}", "web"); st != "running" {
		t.Errorf("after restart: %q", st)
	}
	run("kill", "web")
	if st := run("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "web"); st != "exited 137" {
		t.Errorf("after kill: %q", st)
	}
	since := strconv.FormatInt(time.Now().Unix()-1, 10)
	run("rename", "web", "web2")
	// A name in use is a conflict, with Docker's words; the rename's event
	// has the old name with its slash, as Docker's oldName.
	other := run("create", "--name", "other", ref, "true")
	if out, err := d.Docker(t, "rename", "web2", "other"); err == nil || !strings.Contains(out, `Conflict. The container name "/other" is already in use by container "`+other+`"`) {
		t.Errorf("rename to a name in use: %v %q", err, out)
	}
	if out, err := d.Docker(t, "rename", "web2", "web2"); err == nil || !strings.Contains(out, "Renaming a container with the same name as its current name") {
		t.Errorf("rename to its own name: %v %q", err, out)
	}
	run("rm", other)
	until := strconv.FormatInt(time.Now().Unix()+1, 10)
	if ev := run("events", "--since", since, "--until", until, "--filter", "event=rename", "--format", "{{.Actor.Attributes.oldName}} {{.Actor.Attributes.name}}"); ev != "/web web2" {
		t.Errorf("rename events: %q, want one from /web to web2", ev)
	}
	if ps := run("ps", "-a", "--format", "{{.Names}} {{.Status}}"); !strings.HasPrefix(ps, "web2 Exited (137)") {
		t.Errorf("ps -a = %q", ps)
	}
	// rm of a running container needs -f.
	run("start", "web2")
	if out, err := d.Docker(t, "rm", "web2"); err == nil || !strings.Contains(out, "container is running") {
		t.Errorf("rm of a running container: %v %s", err, out)
	}
	run("rm", "-f", "web2")
	if ps := run("ps", "-aq"); ps != "" {
		t.Errorf("left after rm -f: %q", ps)
	}
	// prune removes stopped ones only.
	run("run", "--name", "done", ref, "true")
	keep := run("run", "-d", ref, "sleep", "30")
	if out := run("container", "prune", "-f"); !strings.Contains(out, "Total reclaimed space") {
		t.Errorf("prune: %q", out)
	}
	if ps := run("ps", "-aq", "--no-trunc"); ps != keep {
		t.Errorf("after prune: %q, want only %s", ps, keep)
	}
	run("rm", "-f", keep)
}

// docker ps -s and inspect --size: the writable layer's size (what the
// container wrote) and, with the image's, the root file system's; prune
// counts the former as reclaimed.
func TestContainerSize(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--name", "wrote", "--label", "sizetest=1", ref, "sh", "-c", "head -c 102400 /dev/zero > /big")
	dockerOK(t, d, "run", "--name", "clean", "--label", "sizetest=1", ref, "true")
	imgSize, err := strconv.ParseInt(dockerOK(t, d, "image", "inspect", "-f", "{{.Size}}", ref), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{"wrote": 102400, "clean": 0} {
		out := dockerOK(t, d, "inspect", "--size", "-f", "{{.SizeRw}} {{.SizeRootFs}}", name)
		var rw, root int64
		if _, err := fmt.Sscan(out, &rw, &root); err != nil {
			t.Fatalf("inspect --size of %s: %q: %v", name, out, err)
		}
		if rw != want || root != rw+imgSize {
			t.Errorf("inspect --size of %s: SizeRw %d, SizeRootFs %d; want %d and %d (the image's %d more)", name, rw, root, want, want+imgSize, imgSize)
		}
	}
	if out := dockerOK(t, d, "ps", "-a", "-s", "--filter", "name=wrote", "--format", "{{.Size}}"); !strings.HasPrefix(out, "102kB (virtual ") {
		t.Errorf("docker ps -s of the container that wrote 100 KiB: %q", out)
	}
	if out := dockerOK(t, d, "inspect", "-f", "{{.SizeRw}}", "wrote"); out != "<nil>" {
		t.Errorf("inspect without --size: SizeRw %q, want none", out)
	}
	// prune reports what the containers wrote as the space reclaimed.
	if out := dockerOK(t, d, "container", "prune", "-f", "--filter", "label=sizetest=1"); !strings.Contains(out, "Total reclaimed space: 102.4kB") {
		t.Errorf("prune of the two: %q", out)
	}
	if out := dockerOK(t, d, "ps", "-aq", "--filter", "label=sizetest=1"); out != "" {
		t.Errorf("left after prune: %q", out)
	}
}

func TestLogsFollowAndTail(t *testing.T) {
	d, ref := pulled(t)
	id, err := d.Docker(t, "run", "-d", ref, "sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done; sleep 1; echo late")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	out, err := d.Docker(t, "logs", "-f", id)
	if err != nil || out != "line1\nline2\nline3\nline4\nline5\nlate\n" {
		t.Errorf("logs -f = %q, %v", out, err)
	}
	if out, _ := d.Docker(t, "logs", "--tail", "2", id); out != "line5\nlate\n" {
		t.Errorf("logs --tail 2 = %q", out)
	}
	// A tail that is not a number is all of it, as on Docker.
	if out, err := d.Docker(t, "logs", "--tail", "abc", id); err != nil || out != "line1\nline2\nline3\nline4\nline5\nlate\n" {
		t.Errorf("logs --tail abc = %q, %v", out, err)
	}
	// --details: the line's attributes (none here) and a space; -t: a
	// stamp with nine digits of fraction, as Docker's, before that.
	if out, _ := d.Docker(t, "logs", "--details", "--tail", "2", id); out != " line5\n late\n" {
		t.Errorf("logs --details = %q", out)
	}
	stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z  late$`)
	if out, _ := d.Docker(t, "logs", "-t", "--details", "--tail", "1", id); !stamped.MatchString(strings.TrimSuffix(out, "\n")) {
		t.Errorf("logs -t --details = %q", out)
	}
	// The SDK demultiplexes stdout and stderr.
	c := d.Client(t)
	rc, err := c.ContainerLogs(context.Background(), id, client.ContainerLogsOptions{ShowStdout: true, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if _, err := stdcopy.StdCopy(&so, &se, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if !strings.Contains(so.String(), "Z line1\n") {
		t.Errorf("timestamped logs = %q", so.String())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var _ = fmt.Sprint
