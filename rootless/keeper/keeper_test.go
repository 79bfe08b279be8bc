package keeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A lease carries the keeper's namespaces and environment; the keeper
// serves the next client only once the lease is back, and exits when
// nothing is left to keep.
func TestServeLeases(t *testing.T) {
	dir := t.TempDir()
	var keep atomic.Bool
	keep.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), Options{StateDir: dir, Env: []string{"A=1"}, Keep: keep.Load, Poll: 20 * time.Millisecond})
	}()
	l, err := Enter(dialRetry(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if l.PID != os.Getpid() || len(l.Env) != 1 || l.Env[0] != "A=1" {
		t.Errorf("reply %+v", l.Reply)
	}
	for f, ns := range map[*os.File]string{l.UserNS: "user", l.MountNS: "mnt"} {
		got, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		want, _ := os.Readlink("/proc/self/ns/" + ns)
		if got != want {
			t.Errorf("%s namespace descriptor is %q, want %q", ns, got, want)
		}
	}

	// A second client waits while the lease is out.
	second := make(chan *Lease, 1)
	go func() {
		l2, err := Enter(dialRetry(t, dir))
		if err != nil {
			t.Error(err)
		}
		second <- l2
	}()
	select {
	case <-second:
		t.Fatal("a second lease was given while the first was out")
	case <-time.After(100 * time.Millisecond):
	}
	l.Close()
	l2 := <-second
	if l2 == nil {
		t.FailNow()
	}
	keep.Store(false)
	select {
	case <-done:
		t.Fatal("the keeper exited with a lease out")
	case <-time.After(100 * time.Millisecond):
	}
	l2.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(dir); err == nil {
		t.Error("the socket still answers after the keeper exited")
	}
}

// A request of another protocol version is refused with an error naming
// both versions, and changes nothing.
func TestServeRefusesOtherVersion(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Serve(ctx, Options{StateDir: dir, Keep: func() bool { return true }, Poll: 20 * time.Millisecond})
	conn := dialRetry(t, dir)
	defer conn.Close()
	if err := writeJSON(conn, Request{V: Version + 1, Op: "enter"}); err != nil {
		t.Fatal(err)
	}
	files, err := recvFiles(conn, 2)
	if err != nil || len(files) != 0 {
		t.Fatalf("refusal carried %d descriptors, %v", len(files), err)
	}
	var r Reply
	if err := json.NewDecoder(conn).Decode(&r); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the keeper speaks version %d, the daemon version %d", Version, Version+1)
	if r.V != Version || !strings.Contains(r.Err, want) {
		t.Errorf("refusal %+v, want %q", r, want)
	}
	// The refusal gave no lease: a request of this version gets one.
	l, err := Enter(dialRetry(t, dir))
	if err != nil {
		t.Fatalf("a request of this version after a refusal: %v", err)
	}
	l.Close()
}

// A keeper that is gone while the client asks is ErrKeeperGone, which
// tells the daemon to start a new one.
func TestEnterKeeperGone(t *testing.T) {
	dir := t.TempDir()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, SocketName), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	conn, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Enter(conn); !errors.Is(err, ErrKeeperGone) {
		t.Errorf("Enter on a closing keeper: %v, want ErrKeeperGone", err)
	}
}

func dialRetry(t *testing.T, dir string) *net.UnixConn {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := Dial(dir)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}
