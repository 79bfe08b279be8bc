//go:build integration

package integration

import (
	"strings"
	"testing"
)

// docker update: the restart policy and resources go into the record (the
// fields not given keep theirs), limits this host cannot enforce are
// warned about, and what Docker refuses is refused.
func TestUpdate(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "-d", "--name", "upd", ref, "sleep", "60")
	out, err := d.Docker(t, "update", "--restart", "on-failure:3", "--memory", "64m", "--memory-swap", "128m", "upd")
	if err != nil || !strings.Contains(out, "upd") {
		t.Fatalf("docker update: %v, %q", err, out)
	}
	if cgroupV1() && !strings.Contains(out, "memory limit capabilities") {
		t.Errorf("docker update on cgroup v1 gave no warning: %q", out)
	}
	dockerOK(t, d, "update", "--cpu-shares", "512", "upd")
	format := "{{.HostConfig.RestartPolicy.Name}} {{.HostConfig.RestartPolicy.MaximumRetryCount}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.CpuShares}}"
	if out := dockerOK(t, d, "inspect", "-f", format, "upd"); out != "on-failure 3 67108864 134217728 512" {
		t.Errorf("after the updates: %q", out)
	}

	dockerOK(t, d, "run", "-d", "--rm", "--name", "updrm", ref, "sleep", "60")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"update", "--restart", "always", "updrm"}, "Restart policy cannot be updated because AutoRemove is enabled for the container"},
		{[]string{"update", "--restart", "sometimes", "upd"}, "invalid restart policy"},
		{[]string{"update", "--memory", "1m", "upd"}, "Minimum memory limit allowed is 6MB"},
		{[]string{"update", "--memory", "256m", "upd"}, "Memory limit should be smaller than already set memoryswap limit"},
		{[]string{"update", "--restart", "always", "nosuch"}, "No such container"},
	} {
		if out, err := d.Docker(t, tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("docker %s: %v, %q; want %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	if out := dockerOK(t, d, "inspect", "-f", format, "upd"); out != "on-failure 3 67108864 134217728 512" {
		t.Errorf("refused updates changed the record: %q", out)
	}
	dockerOK(t, d, "rm", "-f", "upd", "updrm")
}
