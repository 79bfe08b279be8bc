package sidecar

import (
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary is the helper when TestMain finds its role variable: it
// listens on the socket it is given, says it is ready, and exits once the
// hold pipe ends (or at once, for "die").
func TestMain(m *testing.M) {
	switch os.Getenv("SIDECAR_TEST_ROLE") {
	case "helper":
		fs := flag.NewFlagSet("helper", flag.ExitOnError)
		sock := fs.String("socket", "", "")
		pipes := Flags(fs)
		_ = fs.Parse(os.Args[1:])
		ln, err := net.Listen("unix", *sock)
		if err != nil {
			os.Exit(3)
		}
		defer ln.Close()
		if ready := pipes.Ready(); ready != nil {
			ready()
		}
		<-pipes.Hold(context.Background()).Done()
		os.Exit(0)
	case "die":
		os.Exit(4)
	}
	os.Exit(m.Run())
}

func options(t *testing.T, role string) Options {
	t.Helper()
	t.Setenv("SIDECAR_TEST_ROLE", role)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "h.sock")
	return Options{Name: "helper", Binary: exe, Args: []string{"--socket", sock}, Socket: sock,
		LogFile: filepath.Join(dir, "h.log"), Timeout: 20 * time.Second}
}

// Started, the helper listens; stopped, it exits.
func TestStartStop(t *testing.T) {
	p, err := Start(context.Background(), options(t, "helper"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited:
		t.Fatal("the helper exited after its start")
	default:
	}
	p.Stop(10 * time.Second)
	select {
	case <-p.Exited:
	default:
		t.Fatal("Stop returned before the exit")
	}
}

// A helper that dies before it listens is an error naming its log.
func TestStartDies(t *testing.T) {
	o := options(t, "die")
	if _, err := Start(context.Background(), o); err == nil || !strings.Contains(err.Error(), o.LogFile) {
		t.Fatalf("start of a helper that dies: %v", err)
	}
}

// A slot holds the process it keeps until that process exits, by Stop or
// by itself.
func TestSlot(t *testing.T) {
	var s Slot
	if s.Running() || !s.WaitExit(context.Background(), time.Second) {
		t.Fatal("an empty slot runs something")
	}
	p, err := Start(context.Background(), options(t, "helper"))
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	s.Keep(p, func(err error) { exited <- err })
	if !s.Running() || s.WaitExit(context.Background(), 10*time.Millisecond) {
		t.Fatal("the slot lost its running process")
	}
	s.Stop(10 * time.Second)
	<-exited
	if !s.WaitExit(context.Background(), 10*time.Second) || s.Running() {
		t.Fatal("the slot still holds a process that exited")
	}
}

// A process whose exit was seen is not running, whether or not the
// watcher Keep starts has cleared the slot yet.
func TestSlotExitedBeforeWatcher(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	s := Slot{proc: &Process{Exited: exited}}
	if !s.WaitExit(context.Background(), time.Second) || s.Running() || s.Current() != nil {
		t.Fatal("the slot holds a process that exited")
	}
}
