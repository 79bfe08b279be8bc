package shim_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
)

// The container shares the shim's user namespace: uid 0 inside is the
// same uid 0 (real root, or the user mapped by the namespace).
func TestSharedUserNamespace(t *testing.T) {
	if h := shim.DetectHost(); h.InUserNS != env.userns {
		t.Fatalf("DetectHost().InUserNS = %v in a test environment with userns=%v", h.InUserNS, env.userns)
	}
	own, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	out := runOutput(t, testSpec("sh", "-c", "id -u; cat /proc/self/uid_map"))
	if want := "0\n" + string(own); out != want {
		t.Errorf("container sees %q, want %q", out, want)
	}
}

// --network host: no network namespace. In a user namespace the kernel
// refuses a sysfs mount there, and AdjustSpec binds /sys instead.
func TestHostNetwork(t *testing.T) {
	spec := testSpec("sh", "-c", "ls /sys/class/net | grep -qx lo && echo ok")
	var ns []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Type != specs.NetworkNamespace {
			ns = append(ns, n)
		}
	}
	spec.Linux.Namespaces = ns
	if out := runOutput(t, spec); out != "ok\n" {
		t.Errorf("output %q", out)
	}
}

// Limits are enforced where cgroups allow (real root here); elsewhere they
// are dropped with Docker's warning and the container still runs.
func TestMemoryLimit(t *testing.T) {
	const limit = 64 << 20
	spec := testSpec("sleep", "100")
	l := int64(limit)
	spec.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &l}}
	host := shim.DetectHost()
	probe := *spec
	probe.Linux = &specs.Linux{Resources: spec.Linux.Resources}
	if w := shim.AdjustSpec(&probe, host); host.CgroupLimits == (len(w) > 0) {
		t.Fatalf("CgroupLimits=%v but warnings %q", host.CgroupLimits, w)
	}

	ctx := testCtx(t)
	c, err := shim.Start(ctx, newOpts(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	if !host.CgroupLimits {
		return // running at all is the point: an unstripped limit fails Run
	}
	got, err := memoryLimit(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if got != limit {
		t.Errorf("memory limit %d, want %d", got, limit)
	}
}

// memoryLimit reads the cgroup v1 memory limit of pid.
func memoryLimit(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
			if err != nil {
				return 0, err
			}
			return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		}
	}
	return 0, fmt.Errorf("pid %d has no memory cgroup", pid)
}

// runOutput runs spec to its end and returns its stdout; it must exit 0.
func runOutput(t *testing.T, spec *specs.Spec) string {
	t.Helper()
	ctx := testCtx(t)
	c, err := shim.Create(ctx, newOpts(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	var out, serr syncBuffer
	a, err := c.Attach(ctx, shim.AttachOptions{Stdout: &out, Stderr: &serr})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(context.WithoutCancel(ctx))
	if err != nil || st.ExitCode != 0 {
		t.Fatalf("exit %+v %v; stderr %q", st, err, serr.String())
	}
	return out.String()
}
