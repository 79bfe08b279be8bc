//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// --pid container:<name> runs the container in the PID namespace of a
// running one: it sees that container's processes and can signal them;
// they end together. A stopped or unknown container is refused, and the
// refused start leaves the container created.
func TestPidContainer(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "-d", "--name", "target", ref, "sh", "-c", "sleep 300 & wait $!")
	out := dockerOK(t, d, "run", "--rm", "--pid", "container:target", ref, "sh", "-c", "ps -o pid,args; echo me $$")
	lines := strings.Split(out, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "1 sh -c sleep 300") }) ||
		!slices.ContainsFunc(lines, func(l string) bool { return strings.HasSuffix(l, " sleep 300") }) || slices.Contains(lines, "me 1") {
		t.Errorf("ps in the shared namespace:\n%s", out)
	}
	// A container of its own namespace sees none of them.
	if out := dockerOK(t, d, "run", "--rm", ref, "ps", "-o", "args"); strings.Contains(out, "sleep 300") {
		t.Errorf("a container of its own sees the other's processes:\n%s", out)
	}
	// A joiner signals the other's processes; a joiner that runs on
	// ends with the namespace's first process.
	dockerOK(t, d, "run", "-d", "--name", "joiner", "--pid", "container:target", ref, "sleep", "301")
	// Its top is its own processes, not the namespace's.
	if top := dockerOK(t, d, "top", "joiner"); !strings.Contains(top, "sleep 301") || strings.Contains(top, "sleep 300") {
		t.Errorf("docker top joiner:\n%s", top)
	}
	// The killer is a joiner too: the target's end, which its kill
	// causes, may end it with SIGKILL (137) before it exits on its own.
	killer := []string{"run", "--rm", "--pid", "container:target", ref, "sh", "-c", "kill $(ps -o pid,args | awk '$2 == \"sleep\" && $3 == \"300\" {print $1}')"}
	var exitErr *exec.ExitError
	if out, err := d.Docker(t, killer...); err != nil && !(errors.As(err, &exitErr) && exitErr.ExitCode() == 137) {
		t.Fatalf("docker %v: %v\n%s", killer, err, out)
	}
	if got := dockerOK(t, d, "wait", "target"); got != "143" {
		t.Errorf("target's exit after its sleep was killed from the joiner: %q", got)
	}
	if got := dockerOK(t, d, "wait", "joiner"); got != "137" {
		t.Errorf("the joiner's exit after the target's: %q", got)
	}
	dockerOK(t, d, "create", "--name", "late", "--pid", "container:target", ref, "true")
	// Docker's words and class: a system error of the start (500).
	if out, err := d.Docker(t, "start", "late"); err == nil || !strings.Contains(out, "failed to join PID namespace: container ") || !strings.Contains(out, " is not running") {
		t.Errorf("start joining a stopped container: %v, %q", err, out)
	}
	if code, body := rawDo(t, d, "POST", "/containers/late/start", nil, nil); code != 500 {
		t.Errorf("start joining a stopped container: %d %s", code, body)
	}
	if got := dockerOK(t, d, "inspect", "--format", "{{.State.Status}} {{.HostConfig.PidMode}}", "late"); got != "created container:target" {
		t.Errorf("late after the refused start: %q", got)
	}
	if out, err := d.Docker(t, "run", "--rm", "--pid", "container:nope", ref, "true"); err == nil || !strings.Contains(out, "No such container: nope") {
		t.Errorf("--pid container:nope: %v, %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", "target", "joiner", "late")
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
}

// --ipc shareable gives a container a /dev/shm of the engine's (its
// --shm-size), which --ipc container:<name> shares with the IPC
// namespace: both see one namespace and one /dev/shm. Joining a container
// that is not shareable is refused, as Docker does; the engine's mount
// goes when the shareable container stops.
func TestIpcContainer(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", "--name", "donor", "--ipc", "shareable", "--shm-size", "8m", ref, "sh", "-c", "echo hi > /dev/shm/f; sleep 300")
	engine := enginePID(t, d)
	shmMounted := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", engine))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), id+"/shm ")
	}
	if !shmMounted() {
		t.Errorf("no /dev/shm of %s in the engine's mounts", id)
	}
	waitFor(t, func() bool {
		out, err := d.Docker(t, "exec", "donor", "cat", "/dev/shm/f")
		return err == nil && strings.TrimSpace(out) == "hi"
	})
	donorNS := dockerOK(t, d, "exec", "donor", "readlink", "/proc/self/ns/ipc")
	out := dockerOK(t, d, "run", "--rm", "--ipc", "container:donor", ref, "sh", "-c", "readlink /proc/self/ns/ipc; cat /dev/shm/f; echo back > /dev/shm/g; df -k /dev/shm | tail -1")
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || lines[0] != donorNS || lines[1] != "hi" || !strings.Contains(lines[2], " 8192 ") {
		t.Errorf("the joiner saw %q; the donor's namespace is %s", out, donorNS)
	}
	if got := dockerOK(t, d, "exec", "donor", "cat", "/dev/shm/g"); got != "back" {
		t.Errorf("the donor reads the joiner's file as %q", got)
	}
	if own := dockerOK(t, d, "run", "--rm", ref, "readlink", "/proc/self/ns/ipc"); own == donorNS {
		t.Errorf("a container of its own shares the donor's IPC namespace %s", own)
	}
	dockerOK(t, d, "run", "-d", "--name", "private", ref, "sleep", "300")
	if out, err := d.Docker(t, "run", "--rm", "--ipc", "container:private", ref, "true"); err == nil || !strings.Contains(out, "non-shareable IPC") {
		t.Errorf("joining a private IPC namespace: %v, %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", "donor", "private")
	if shmMounted() {
		t.Errorf("the donor's /dev/shm is still mounted in the engine after its end")
	}
	if out, err := d.Docker(t, "run", "--rm", "--ipc", "container:donor", ref, "true"); err == nil || !strings.Contains(out, "No such container: donor") {
		t.Errorf("--ipc container:donor after its removal: %v, %q", err, out)
	}
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
}

// --device binds the host's device node (or each node under a directory)
// at the container path; access narrower than rw is the device cgroup's
// to enforce, warned of where there is none (rootless on cgroup v1); a
// missing node fails the start with Docker's words.
func TestDevices(t *testing.T) {
	d, ref := pulled(t)
	out := dockerOK(t, d, "run", "--rm", "--device", "/dev/zero:/dev/myzero", "--device", "/dev/net:/dev/hostnet", ref, "sh", "-c",
		"head -c 3 /dev/myzero | od -An -tx1; test -c /dev/myzero && echo char; test -c /dev/hostnet/tun && echo tun")
	if lines := strings.Split(out, "\n"); len(lines) != 3 || strings.TrimSpace(lines[0]) != "00 00 00" || lines[1] != "char" || lines[2] != "tun" {
		t.Errorf("the container's devices: %q", out)
	}
	out, err := d.Docker(t, "run", "--rm", "--device", "/dev/null:/dev/ronull:r", ref, "sh", "-c", "(echo x > /dev/ronull) 2>&1 && echo written")
	if err != nil {
		t.Fatalf("--device with access r: %v, %q", err, out)
	}
	if cgroupV1() {
		if !strings.Contains(out, "Device access r discarded") || !strings.Contains(out, "written") {
			t.Errorf("--device :r on cgroup v1: %q", out)
		}
	} else if !strings.Contains(out, "Operation not permitted") {
		t.Errorf("--device :r where the device cgroup applies: %q", out)
	}
	// --device-cgroup-rule adds rules; one narrower than rw is warned of
	// where no device cgroup applies.
	out, err = d.Docker(t, "run", "--rm", "--device-cgroup-rule", "c 1:3 rwm", "--device-cgroup-rule", "c 1:5 r", ref, "echo", "ran")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "ran") || cgroupV1() != strings.Contains(out, "Device access r discarded") {
		t.Errorf("--device-cgroup-rule: %v, %q", err, out)
	}
	if out, err := d.Docker(t, "run", "--rm", "--device", "/dev/nope", ref, "true"); err == nil || !strings.Contains(out, `error gathering device information while adding custom device "/dev/nope"`) {
		t.Errorf("--device /dev/nope: %v, %q", err, out)
	}
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
}

// docker top with ps options runs ps with them, as Docker does, and keeps
// the container's processes; without a PID column there is nothing to
// keep them by.
func TestTopPsOptions(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "-d", "--name", "tp", ref, "sh", "-c", "sleep 300 & wait $!")
	var out string
	// The shell may not have started its sleep yet on a busy machine.
	waitFor(t, func() bool {
		out = dockerOK(t, d, "top", "tp", "aux")
		return strings.Count(out, "\n") == 2
	})
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "USER") || !strings.Contains(lines[0], "%CPU") ||
		!strings.HasSuffix(lines[1], "sh -c sleep 300 & wait $!") || !strings.HasSuffix(lines[2], "sleep 300") {
		t.Errorf("docker top tp aux:\n%s", out)
	}
	if out := dockerOK(t, d, "top", "tp", "-o", "pid,comm"); !regexp.MustCompile(`^PID +COMMAND\n\d+ +sh\n\d+ +sleep$`).MatchString(out) {
		t.Errorf("docker top tp -o pid,comm:\n%s", out)
	}
	if out, err := d.Docker(t, "top", "tp", "-o", "comm"); err == nil || !strings.Contains(out, "Couldn't find PID field in ps output") {
		t.Errorf("docker top without a PID column: %v, %q", err, out)
	}
	if out, err := d.Docker(t, "top", "tp", "--no-such-option"); err == nil || !strings.Contains(out, "Error running ps") {
		t.Errorf("docker top with a bad option: %v, %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", "tp")
}

// A -v source that does not exist is made at start, as Docker does, and
// so is a --mount bind source with bind-create-src (compose's short
// syntax asks for it); other --mount binds need their source.
func TestBindSourceCreated(t *testing.T) {
	d, ref := pulled(t)
	base := t.TempDir()
	made := filepath.Join(base, "new", "sub")
	dockerOK(t, d, "create", "--name", "later", "-v", made+":/d", ref, "sh", "-c", "echo in > /d/f")
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("the source exists after create alone: %v", err)
	}
	dockerOK(t, d, "start", "-a", "later")
	if b, err := os.ReadFile(filepath.Join(made, "f")); err != nil || string(b) != "in\n" {
		t.Errorf("the made source holds %q, %v", b, err)
	}
	if fi, err := os.Stat(made); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("the made source: %v, %v", fi, err)
	}
	// The CLI has no flag for CreateMountpoint: the SDK, as compose.
	m2 := filepath.Join(base, "m2")
	c, ctx := d.Client(t), context.Background()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Cmd: []string{"touch", "/m/x"}},
		HostConfig: &containertypes.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeBind, Source: m2, Target: "/m",
			BindOptions: &mount.BindOptions{CreateMountpoint: true}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := dockerOK(t, d, "wait", created.ID); got != "0" {
		t.Errorf("the CreateMountpoint container exited %s", got)
	}
	if _, err := os.Stat(filepath.Join(m2, "x")); err != nil {
		t.Errorf("CreateMountpoint: %v", err)
	}
	dockerOK(t, d, "rm", created.ID)
	if out, err := d.Docker(t, "run", "--rm", "--mount", "type=bind,src="+filepath.Join(base, "nope")+",dst=/m", ref, "true"); err == nil || !strings.Contains(out, "bind source path does not exist") {
		t.Errorf("--mount with a missing source: %v, %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(base, "nope")); !os.IsNotExist(err) {
		t.Errorf("a --mount source was made: %v", err)
	}
	dockerOK(t, d, "rm", "later")
}
