package engine

import (
	"context"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

func createTestContainer(t *testing.T, e *testEngine, name string) string {
	t.Helper()
	resp, err := e.ContainerCreate(context.Background(), CreateRequest{
		Name:       name,
		Config:     &containertypes.Config{Image: "busybox", Cmd: []string{"sleep", "60"}},
		HostConfig: &containertypes.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.ID
}

func waitResult(t *testing.T, ch <-chan container.WaitResult) container.WaitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the wait never returned")
		return container.WaitResult{}
	}
}

func state(t *testing.T, e *testEngine, id string) *containertypes.State {
	t.Helper()
	c, err := e.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c.State
}

// create → start → the process exits: the record goes created, running
// (with the shim's pid), exited with the code, and a waiter gets it.
func TestLifecycleCreateStartExit(t *testing.T) {
	e := newTestEngine(t)
	defer e.Close()
	ctx := context.Background()
	id := createTestContainer(t, e, "one")
	if st := state(t, e, id); st.Status != "created" {
		t.Fatalf("after create: %s", st.Status)
	}
	wait, err := e.ContainerWait(ctx, id, WaitRequest{Condition: "next-exit"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	sh := e.shims.only(t)
	if st := state(t, e, id); st.Status != "running" || st.Pid != sh.pid {
		t.Fatalf("after start: %s, pid %d (shim's %d)", st.Status, st.Pid, sh.pid)
	}
	sh.exit(3)
	if r := waitResult(t, wait); r.ExitCode != 3 {
		t.Errorf("wait: %+v", r)
	}
	st := state(t, e, id)
	for st.Status == "running" {
		time.Sleep(time.Millisecond)
		st = state(t, e, id)
	}
	if st.Status != "exited" || st.ExitCode != 3 || st.Pid != 0 {
		t.Errorf("after exit: %s, code %d, pid %d", st.Status, st.ExitCode, st.Pid)
	}
	if err := e.ContainerRemove(ctx, id, RemoveRequest{}); err != nil {
		t.Errorf("remove: %v", err)
	}
}

// A stop ends a running container through its shim (the fake exits on
// the stop signal) and records 143.
func TestLifecycleStop(t *testing.T) {
	e := newTestEngine(t)
	defer e.Close()
	ctx := context.Background()
	id := createTestContainer(t, e, "stopped")
	if err := e.ContainerStart(ctx, id); err != nil {
		t.Fatal(err)
	}
	timeout := 5
	if err := e.ContainerStop(ctx, id, StopRequest{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	if st := state(t, e, id); st.Status != "exited" || st.ExitCode != 143 {
		t.Errorf("after stop: %s, code %d", st.Status, st.ExitCode)
	}
}

// A daemon restart (a new engine on the same state) adopts a container
// whose shim still runs, records the exit a dead shim left in its exit
// file, and marks one whose shim left nothing as lost (255).
func TestLifecycleReconcile(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	alive, exited, lost := createTestContainer(t, e, "alive"), createTestContainer(t, e, "exited"), createTestContainer(t, e, "lost")
	shimOf := map[string]*fakeShim{}
	for _, id := range []string{alive, exited, lost} {
		if err := e.ContainerStart(ctx, id); err != nil {
			t.Fatal(err)
		}
		c, err := e.containers.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sh, err := e.shims.Connect(ctx, c.Runtime.ShimSocket)
		if err != nil {
			t.Fatal(err)
		}
		shimOf[id] = sh.(*fakeConn).fakeShim
	}
	// The daemon dies: its monitors stop waiting, the shims go on (or
	// not), without anyone to record what happens meanwhile.
	e.shims.kill()
	e.shims.mu.Lock()
	shimOf[exited].gone, shimOf[lost].gone = true, true
	shimOf[lost].exitFile = ""
	e.shims.mu.Unlock()
	shimOf[exited].exit(7)
	shimOf[lost].exit(9)

	e2 := reopenTestEngine(t, e.dirs, e.store, e.shims.restart())
	defer e2.Close()
	if st := state(t, e2, alive); st.Status != "running" || st.Pid != shimOf[alive].pid {
		t.Errorf("adopted: %s, pid %d", st.Status, st.Pid)
	}
	if st := state(t, e2, exited); st.Status != "exited" || st.ExitCode != 7 {
		t.Errorf("exited while no daemon ran: %s, code %d", st.Status, st.ExitCode)
	}
	if st := state(t, e2, lost); st.Status != "exited" || st.ExitCode != container.LostExitCode || st.Error == "" {
		t.Errorf("lost: %s, code %d, error %q", st.Status, st.ExitCode, st.Error)
	}
	// The adopted container is watched again: its exit is recorded.
	wait, err := e2.ContainerWait(ctx, alive, WaitRequest{Condition: "not-running"})
	if err != nil {
		t.Fatal(err)
	}
	shimOf[alive].exit(4)
	if r := waitResult(t, wait); r.ExitCode != 4 {
		t.Errorf("adopted container's exit: %+v", r)
	}
}
