package shim_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// A warm shim keeps a hutch-runtime ready; when that runtime is gone by
// the time the shim gets its container, the shim starts another and the
// container runs all the same.
func TestWarmShimRuntimeGone(t *testing.T) {
	t.Setenv("GOMAXPROCS", "4")
	ctx := testCtx(t)
	first := newOpts(t, testSpec("true"))
	if _, err := runToExit(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The first start left a warm shim behind, with its runtime.
	var spare int
	if err := waitFor(ctx, func() bool {
		spare = warmRuntime()
		return spare != 0
	}); err != nil {
		t.Fatal("no warm shim with a runtime after a start")
	}
	// Both run with one P (wire.OneP), whatever the engine's GOMAXPROCS.
	for _, pid := range []int{parentOf(spare), spare} {
		var got []string
		for _, kv := range procEnv(pid) {
			if strings.HasPrefix(kv, "GOMAXPROCS=") {
				got = append(got, kv)
			}
		}
		if len(got) != 1 || got[0] != "GOMAXPROCS=1" {
			t.Errorf("%v (pid %d) runs with %q, want GOMAXPROCS=1", procArgs(pid), pid, got)
		}
	}
	if err := syscall.Kill(spare, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	o := newOpts(t, testSpec("echo", "after"))
	exit, err := runToExit(ctx, o)
	if err != nil || exit.ExitCode != 0 {
		t.Fatalf("start after the spare runtime died: %+v %v", exit, err)
	}
	if got := logEntries(t, o.LogPath); len(got) != 1 || string(got[0].Line) != "after\n" {
		t.Errorf("log %q", got)
	}
	// It was the warm shim, and it saw its runtime gone.
	if b, _ := os.ReadFile(o.BundleDir + "/shim.log"); !strings.Contains(string(b), "spare hutch-runtime gone") {
		t.Errorf("shim.log does not show the lost spare:\n%s", b)
	}
}

// runToExit starts the container of o and waits for its end.
func runToExit(ctx context.Context, o shim.StartOptions) (wire.ExitStatus, error) {
	c, err := shim.Start(ctx, o)
	if err != nil {
		return wire.ExitStatus{}, err
	}
	return c.Wait(ctx)
}

// warmRuntime finds the hutch-runtime an idle warm shim of this test keeps
// ready, or 0.
func warmRuntime() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args := procArgs(pid)
		if len(args) != 3 || args[0] != env.bin || args[1] != "warm" {
			continue
		}
		if cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd"); cwd != "/" {
			continue
		}
		for _, c := range ents {
			cpid, err := strconv.Atoi(c.Name())
			if err == nil && parentOf(cpid) == pid && len(procArgs(cpid)) == 2 && procArgs(cpid)[1] == "call" {
				return cpid
			}
		}
	}
	return 0
}

func procArgs(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func procEnv(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func parentOf(pid int) int {
	_, ppid, _ := procStat(pid)
	return ppid
}
