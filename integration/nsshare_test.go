//go:build integration

package integration

import (
	"slices"
	"strings"
	"testing"
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
	dockerOK(t, d, "run", "--rm", "--pid", "container:target", ref, "sh", "-c", "kill $(ps -o pid,args | awk '$2 == \"sleep\" && $3 == \"300\" {print $1}')")
	if got := dockerOK(t, d, "wait", "target"); got != "143" {
		t.Errorf("target's exit after its sleep was killed from the joiner: %q", got)
	}
	if got := dockerOK(t, d, "wait", "joiner"); got != "137" {
		t.Errorf("the joiner's exit after the target's: %q", got)
	}
	dockerOK(t, d, "create", "--name", "late", "--pid", "container:target", ref, "true")
	if out, err := d.Docker(t, "start", "late"); err == nil || !strings.Contains(out, "is not running") {
		t.Errorf("start joining a stopped container: %v, %q", err, out)
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
