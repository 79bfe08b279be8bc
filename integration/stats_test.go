//go:build integration

package integration

import (
	"strconv"
	"strings"
	"testing"
)

// docker stats: a busy container shows its CPU, memory, threads and
// network from /proc (there is no cgroup of its own rootless on cgroup
// v1); one that does not run shows zeros.
func TestStats(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "-d", "--name", "busy", ref, "sh", "-c", "x=$(head -c 1048576 /dev/zero | tr '\\0' a); while :; do :; done")
	dockerOK(t, d, "create", "--name", "idle", ref, "true")
	out := dockerOK(t, d, "stats", "--no-stream", "--format", "{{.Name}} {{.CPUPerc}} {{.MemUsage}} {{.PIDs}} {{.NetIO}}", "busy", "idle")
	lines := strings.Split(out, "\n")
	if len(lines) != 2 {
		t.Fatalf("docker stats:\n%s", out)
	}
	f := strings.Fields(lines[0]) // busy 99.12% 1.2MiB / 23.5GiB 1 1.1kB / 0B
	if len(f) != 9 || f[0] != "busy" {
		t.Fatalf("docker stats of busy: %q", lines[0])
	}
	if cpu, err := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64); err != nil || cpu < 10 {
		t.Errorf("CPU of a busy loop: %q", f[1])
	}
	if !strings.HasSuffix(f[2], "MiB") || f[4] == "0B" {
		t.Errorf("memory of a shell holding 1 MiB: %s / %s", f[2], f[4])
	}
	if f[5] != "1" {
		t.Errorf("PIDs of one shell: %q", f[5])
	}
	if lines[1] != "idle 0.00% 0B / 0B 0 0B / 0B" {
		t.Errorf("docker stats of a container never started: %q", lines[1])
	}
	dockerOK(t, d, "rm", "-f", "busy", "idle")
}
