//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// denyMkdirProfile allows every call but mkdir and mkdirat, in Docker's
// profile format.
const denyMkdirProfile = `{
  "defaultAction": "SCMP_ACT_ALLOW",
  "syscalls": [ { "names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO" } ]
}
`

// writeProfile writes a seccomp profile where the docker CLI (which reads
// it and sends its JSON) and the daemon can read it.
func writeProfile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// seccompMode is the Seccomp: line of /proc/self/status: 0 none, 2 filter.
func seccompMode(t *testing.T, d *daemon, args ...string) string {
	t.Helper()
	out := dockerOK(t, d, append(args, "grep", "Seccomp:", "/proc/self/status")...)
	return strings.TrimSpace(strings.TrimPrefix(out, "Seccomp:"))
}

// Containers get Docker's default profile: the calls it denies fail with
// EPERM, unless the container is unconfined, privileged, or holds the
// capability the profile opens them for; execs run under the container's
// filter; no-new-privileges and a non-root user keep it.
func TestSeccompDefaultProfile(t *testing.T) {
	d, ref := pulled(t)

	t.Run("info", func(t *testing.T) {
		out := dockerOK(t, d, "info", "--format", "{{json .SecurityOptions}}")
		if !strings.Contains(out, `"name=seccomp,profile=builtin"`) {
			t.Errorf("SecurityOptions %s lack name=seccomp,profile=builtin", out)
		}
		if out := dockerOK(t, d, "info"); !strings.Contains(out, "seccomp") || !strings.Contains(out, "Profile: builtin") {
			t.Errorf("docker info does not show the seccomp profile:\n%s", out)
		}
	})

	t.Run("modes", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"run", "--rm", ref}, "2"},
			{[]string{"run", "--rm", "--security-opt", "seccomp=unconfined", ref}, "0"},
			{[]string{"run", "--rm", "--security-opt", "seccomp=builtin", ref}, "2"},
			{[]string{"run", "--rm", "--privileged", ref}, "0"},
			{[]string{"run", "--rm", "--cap-add", "SYS_ADMIN", ref}, "2"},
			// runc installs the filter before it drops to the user.
			{[]string{"run", "--rm", "--user", "1000:1000", ref}, "2"},
			{[]string{"run", "--rm", "--user", "1000:1000", "--security-opt", "no-new-privileges", ref}, "2"},
			// Its steps run in a hutch-runtime of the shim's own, not in
			// the runtime server.
			{[]string{"run", "--rm", "--pid", "host", ref}, "2"},
			{[]string{"run", "--rm", "-t", ref}, "2"},
		} {
			if got := seccompMode(t, d, tc.args...); got != tc.want {
				t.Errorf("%s: Seccomp: %s, want %s", strings.Join(tc.args, " "), got, tc.want)
			}
		}
	})

	t.Run("no-new-privileges", func(t *testing.T) {
		if out := dockerOK(t, d, "run", "--rm", "--security-opt", "no-new-privileges", ref, "grep", "NoNewPrivs:", "/proc/self/status"); !strings.HasSuffix(out, "1") {
			t.Errorf("--security-opt no-new-privileges: %q", out)
		}
		if out := dockerOK(t, d, "run", "--rm", ref, "grep", "NoNewPrivs:", "/proc/self/status"); !strings.HasSuffix(out, "0") {
			t.Errorf("by default: %q", out)
		}
	})

	// unshare(CLONE_NEWUSER) needs no capability: only the profile, which
	// opens unshare to CAP_SYS_ADMIN, stops it.
	t.Run("unshare", func(t *testing.T) {
		out, err := d.Docker(t, "run", "--rm", ref, "unshare", "-U", "true")
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("unshare -U under the default profile: %v\n%s", err, out)
		}
		dockerOK(t, d, "run", "--rm", "--security-opt", "seccomp=unconfined", ref, "unshare", "-U", "true")
		dockerOK(t, d, "run", "--rm", "--cap-add", "SYS_ADMIN", ref, "unshare", "-U", "true")
		dockerOK(t, d, "run", "--rm", "--cap-add", "SYS_ADMIN", ref, "unshare", "-m", "true")
	})

	// busybox's mount words EPERM "permission denied (are you root?)".
	t.Run("mount", func(t *testing.T) {
		out, err := d.Docker(t, "run", "--rm", ref, "mount", "-t", "tmpfs", "none", "/tmp")
		if err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("mount under the default profile: %v\n%s", err, out)
		}
		out = dockerOK(t, d, "run", "--rm", "--cap-add", "SYS_ADMIN", ref, "sh", "-c", "mount -t tmpfs none /tmp && grep ' /tmp ' /proc/mounts")
		if !strings.Contains(out, "tmpfs") {
			t.Errorf("--cap-add SYS_ADMIN: mount: %q", out)
		}
		// The capability would allow it; a profile that denies mount wins.
		p := writeProfile(t, "nomount.json", `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mount"],"action":"SCMP_ACT_ERRNO"}]}`)
		out, err = d.Docker(t, "run", "--rm", "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp="+p, ref, "mount", "-t", "tmpfs", "none", "/tmp")
		if err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("mount denied by a custom profile, with CAP_SYS_ADMIN: %v\n%s", err, out)
		}
	})

	t.Run("exec", func(t *testing.T) {
		id := dockerOK(t, d, "run", "-d", ref, "sleep", "300")
		defer d.Docker(t, "rm", "-f", id)
		if out := dockerOK(t, d, "exec", id, "grep", "Seccomp:", "/proc/self/status"); !strings.HasSuffix(out, "2") {
			t.Errorf("exec: %q", out)
		}
		out, err := d.Docker(t, "exec", id, "unshare", "-U", "true")
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("unshare -U in an exec: %v\n%s", err, out)
		}
		// The program reaches the init as a file of its own, which
		// neither the command nor an exec keeps.
		for _, args := range [][]string{{"ls", "-l", "/proc/1/fd"}, {"sh", "-c", "ls -l /proc/$$/fd"}} {
			if out := dockerOK(t, d, append([]string{"exec", id}, args...)...); strings.Contains(out, "seccomp") || strings.Contains(out, "memfd") {
				t.Errorf("a process kept the filter's file: %s\n%s", args, out)
			}
		}
		// --privileged on an exec gives capabilities, not another filter.
		if out := dockerOK(t, d, "exec", "--privileged", id, "grep", "Seccomp:", "/proc/self/status"); !strings.HasSuffix(out, "2") {
			t.Errorf("exec --privileged: %q", out)
		}
		un := dockerOK(t, d, "run", "-d", "--security-opt", "seccomp=unconfined", ref, "sleep", "300")
		defer d.Docker(t, "rm", "-f", un)
		if out := dockerOK(t, d, "exec", un, "grep", "Seccomp:", "/proc/self/status"); !strings.HasSuffix(out, "0") {
			t.Errorf("exec in an unconfined container: %q", out)
		}
	})
}

// A custom profile applies to the container and its execs; inspect shows
// the option as the client sent it, the profile's JSON, as Docker does.
func TestSeccompCustomProfile(t *testing.T) {
	d, ref := pulled(t)
	p := writeProfile(t, "nomkdir.json", denyMkdirProfile)
	script := `mkdir /tmp/d 2>&1; echo "mkdir=$?"; touch /tmp/f && echo touched; grep Seccomp: /proc/self/status`
	out := dockerOK(t, d, "run", "--rm", "--security-opt", "seccomp="+p, ref, "sh", "-c", script)
	for _, want := range []string{"Operation not permitted", "mkdir=1", "touched", "Seccomp:\t2"} {
		if !strings.Contains(out, want) {
			t.Errorf("under a profile denying mkdir, output lacks %q:\n%s", want, out)
		}
	}
	// A privileged container naming a profile gets it (moby#47499).
	out, err := d.Docker(t, "run", "--rm", "--privileged", "--security-opt", "seccomp="+p, ref, "mkdir", "/tmp/d")
	if err == nil || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("--privileged with a profile denying mkdir: %v\n%s", err, out)
	}

	id := dockerOK(t, d, "run", "-d", "--security-opt", "seccomp="+p, ref, "sleep", "300")
	defer d.Docker(t, "rm", "-f", id)
	out, err = d.Docker(t, "exec", id, "mkdir", "/tmp/e")
	if err == nil || !strings.Contains(out, "Operation not permitted") {
		t.Errorf("mkdir in an exec: %v\n%s", err, out)
	}
	dockerOK(t, d, "exec", id, "touch", "/tmp/g")

	var opts []string
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "--format", "{{json .HostConfig.SecurityOpt}}", id)), &opts); err != nil {
		t.Fatal(err)
	}
	if len(opts) != 1 || !strings.HasPrefix(opts[0], "seccomp=") {
		t.Fatalf("SecurityOpt %q", opts)
	}
	var got, want any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(opts[0], "seccomp=")), &got); err != nil {
		t.Fatalf("SecurityOpt %q: %v", opts[0], err)
	}
	_ = json.Unmarshal([]byte(denyMkdirProfile), &want)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("inspect shows the profile %s, want %s", g, w)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A profile that cannot be loaded is refused at create with a 400 and no
// container is made.
func TestSeccompBadProfile(t *testing.T) {
	d, ref := pulled(t)
	// Valid JSON, which the CLI sends, with an action libseccomp lacks.
	bad := writeProfile(t, "bad.json", `{"defaultAction":"SCMP_ACT_MAYBE"}`)
	out, err := d.Docker(t, "create", "--name", "bad", "--security-opt", "seccomp="+bad, ref, "true")
	if err == nil || !strings.Contains(out, "invalid seccomp profile") || !strings.Contains(out, "SCMP_ACT_MAYBE") {
		t.Errorf("create with a bad action: %v\n%s", err, out)
	}
	out, err = d.Docker(t, "run", "--rm", "--security-opt", "seccomp="+writeProfile(t, "idx.json",
		`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kill"],"action":"SCMP_ACT_ERRNO","args":[{"index":9,"value":0,"op":"SCMP_CMP_EQ"}]}]}`), ref, "true")
	if err == nil || !strings.Contains(out, "argument index 9") {
		t.Errorf("run with an argument index past the sixth: %v\n%s", err, out)
	}
	// What the CLI would not send: a profile that is not JSON.
	for _, body := range []string{
		`{"Image":"` + ref + `","Cmd":["true"],"HostConfig":{"SecurityOpt":["seccomp={not json"]}}`,
		`{"Image":"` + ref + `","Cmd":["true"],"HostConfig":{"SecurityOpt":["seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"mkdir\"],\"action\":\"NOPE\"}]}"]}}`,
	} {
		code, resp := postJSON(t, d, "/containers/create?name=raw", body)
		if code != 400 || !strings.Contains(resp, "seccomp profile") {
			t.Errorf("POST /containers/create %s: %d %s", body, code, resp)
		}
	}
	if out := dockerOK(t, d, "ps", "-a", "-q"); out != "" {
		t.Errorf("refused creates left containers: %q", out)
	}
	res, err := d.Client(t).ContainerList(t.Context(), client.ContainerListOptions{All: true})
	if err != nil || len(res.Items) != 0 {
		t.Errorf("containers after refused creates: %+v %v", res.Items, err)
	}
}

// postJSON posts body to the daemon and returns the status and body.
func postJSON(t *testing.T, d *daemon, path, body string) (int, string) {
	t.Helper()
	resp, err := unixHTTPClient(d.Socket).Post("http://hutch"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// daemon.json's seccomp-profile sets the default filter: unconfined turns
// it off (and /info says so, with Docker's warning), a path applies that
// profile; a container still picks its own.
func TestSeccompDaemonProfile(t *testing.T) {
	ref := busybox(t)
	t.Run("unconfined", func(t *testing.T) {
		conf := writeProfile(t, "daemon.json", `{"seccomp-profile": "unconfined"}`)
		d := startDaemon(t, "--config-file", conf)
		dockerOK(t, d, "pull", "-q", ref)
		out := dockerOK(t, d, "info", "--format", "{{json .SecurityOptions}} {{json .Warnings}}")
		if !strings.Contains(out, `"name=seccomp,profile=unconfined"`) || !strings.Contains(out, "not using the default seccomp profile") {
			t.Errorf("info: %s", out)
		}
		if got := seccompMode(t, d, "run", "--rm", ref); got != "0" {
			t.Errorf("Seccomp: %s, want 0", got)
		}
		dockerOK(t, d, "run", "--rm", ref, "unshare", "-U", "true")
		if got := seccompMode(t, d, "run", "--rm", "--security-opt", "seccomp=builtin", ref); got != "2" {
			t.Errorf("seccomp=builtin: Seccomp: %s, want 2", got)
		}
	})
	t.Run("custom", func(t *testing.T) {
		p := writeProfile(t, "nomkdir.json", denyMkdirProfile)
		conf := writeProfile(t, "daemon.json", `{"seccomp-profile": "`+p+`"}`)
		d := startDaemon(t, "--config-file", conf)
		dockerOK(t, d, "pull", "-q", ref)
		if out := dockerOK(t, d, "info", "--format", "{{json .SecurityOptions}}"); !strings.Contains(out, `"name=seccomp,profile=`+p+`"`) {
			t.Errorf("info: %s", out)
		}
		out, err := d.Docker(t, "run", "--rm", ref, "mkdir", "/tmp/d")
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("mkdir under the daemon's profile: %v\n%s", err, out)
		}
		// Docker's default profile allows mkdir and denies unshare.
		out, err = d.Docker(t, "run", "--rm", "--security-opt", "seccomp=builtin", ref, "sh", "-c", "mkdir /tmp/d && unshare -U true")
		if err == nil || !strings.Contains(out, "unshare") || strings.Contains(out, "mkdir:") {
			t.Errorf("seccomp=builtin on a daemon with a custom profile: %v\n%s", err, out)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		conf := writeProfile(t, "daemon.json", `{"seccomp-profile": "/nonexistent/profile.json"}`)
		env, _, _ := daemonEnv(t)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, hutchBin(t), "daemon", "--config-file", conf)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if out := string(b); err == nil || !strings.Contains(out, "opening seccomp profile (/nonexistent/profile.json) failed") {
			t.Errorf("daemon with a missing profile: %v\n%s", err, out)
		}
	})
}

// BuildKit's RUN steps run under its default profile (Docker's), through
// hutch-runtime as containers do.
func TestSeccompBuildKitRun(t *testing.T) {
	d, ref := pulled(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + `
RUN grep Seccomp: /proc/self/status > /seccomp; (unshare -U true 2>&1 || true) > /unshare
`})
	out := bk(t, d, "build", "--progress=plain", "-t", "bkseccomp", dir)
	if got := bk(t, d, "run", "--rm", "--security-opt", "seccomp=unconfined", "bkseccomp", "cat", "/seccomp", "/unshare"); !strings.Contains(got, "Seccomp:\t2") || !strings.Contains(got, "Operation not permitted") {
		t.Errorf("what the RUN step saw: %q\n%s", got, out)
	}
}
