package shim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

var seq atomic.Int64

// dockerCaps is Docker's default capability set.
var dockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// testSpec is an OCI spec shaped like the one Docker generates by default.
func testSpec(args ...string) *specs.Spec {
	caps := &specs.LinuxCapabilities{Bounding: dockerCaps, Effective: dockerCaps, Permitted: dockerCaps}
	noexec := []string{"nosuid", "noexec", "nodev"}
	return &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{}, // newOpts points it at the test rootfs
		Process: &specs.Process{
			Args:         args,
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			Cwd:          "/",
			Capabilities: caps,
		},
		Hostname: "shimtest",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: noexec},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: append([]string{"ro"}, noexec...)},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: noexec},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: append([]string{"mode=1777", "size=67108864"}, noexec...)},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace},
			},
			MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

// newOpts writes a bundle for spec and returns the options to start it.
func newOpts(t testing.TB, spec *specs.Spec) shim.StartOptions {
	t.Helper()
	needContainers(t)
	if spec.Root.Path == "" {
		spec.Root.Path = env.rootfs
	}
	id := fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1))
	dir := filepath.Join(env.base, "c", id)
	bundle := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(bundle, 0o711); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, wire.SpecFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	o := shim.StartOptions{
		ID: id, BundleDir: bundle, StateDir: env.state, ShimBinary: env.bin, RuntimeBinary: env.rt,
		SocketPath: filepath.Join(dir, "shim.sock"), LogPath: filepath.Join(dir, "json.log"),
		ExitFile: filepath.Join(dir, "exit.json"),
	}
	t.Cleanup(func() {
		// Never leave a container behind a failed test.
		if c, err := shim.Connect(context.Background(), o.SocketPath); err == nil {
			_ = c.Kill(context.Background(), syscall.SIGKILL)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = c.Wait(ctx)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(bundle, "shim.log")); err == nil && len(b) > 0 {
				t.Logf("shim.log:\n%s", b)
			}
		}
	})
	return o
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// logEntries reads the whole json-file log.
func logEntries(t *testing.T, path string) []jsonlog.Entry {
	t.Helper()
	var out []jsonlog.Entry
	err := jsonlog.Read(context.Background(), path, jsonlog.ReadOptions{Tail: -1}, func(e jsonlog.Entry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return errors.New("condition not met before the deadline")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
