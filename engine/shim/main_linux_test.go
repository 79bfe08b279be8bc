package shim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// These tests run real containers, in the environment the daemon really
// has: uid 0, either real root (go test as root) or inside a user namespace
// (go test as an ordinary user: TestMain re-executes the test binary in a
// new user+mount namespace mapping uid/gid 0 to the user, single-UID with
// setgroups denied — what rootlesskit's fallback mode gives the daemon; the
// full-range mode differs only in having more ids mapped).
//
// HUTCH_SHIM_TEST_KEEP=1 keeps the temporary directory (bundles, logs,
// shim.log). HUTCH_SHIM_BINARY and HUTCH_RUNTIME_BINARY name a prebuilt
// hutch-shim and hutch-runtime (needed when the tests run as a user without
// the Go toolchain); otherwise they are built here.

const usernsEnv = "HUTCH_SHIM_TEST_IN_USERNS"

// env describes the test environment, set up once by TestMain.
var env struct {
	base   string // temp dir holding bin/, rootfs/, state/ and containers
	bin    string // hutch-shim
	rt     string // hutch-runtime
	rootfs string
	state  string // libcontainer root: not nested with bin's directory
	userns bool
}

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 && os.Getenv(usernsEnv) == "" {
		os.Exit(reexecInUserNS())
	}
	env.userns = os.Getenv(usernsEnv) != ""
	code := m.Run()
	// A failed run keeps its files for inspection, and so does
	// HUTCH_SHIM_TEST_KEEP=1.
	if code == 0 && env.base != "" && os.Getenv("HUTCH_SHIM_TEST_KEEP") == "" {
		_ = os.RemoveAll(env.base)
	}
	os.Exit(code)
}

var (
	setupOnce sync.Once
	setupErr  error
)

// needContainers builds the shim and the rootfs once, for the tests that
// run containers (unit tests and fuzzing do not pay for it).
func needContainers(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatal("setup:", setupErr)
	}
}

func reexecInUserNS() int {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), usernsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "re-exec in a user namespace:", err)
		return 2
	}
	return 0
}

func setup() error {
	base, err := os.MkdirTemp("", "hutch-shim-test")
	if err != nil {
		return err
	}
	// The shim socket and the state are for our uid 0 only, but
	// libcontainer needs to traverse the directories.
	if err := os.Chmod(base, 0o711); err != nil {
		return err
	}
	env.base = base
	env.state = filepath.Join(base, "state")
	env.rootfs = filepath.Join(base, "rootfs")
	for _, b := range []struct {
		dst    *string
		envVar string
		name   string
		cgo    string
	}{{&env.bin, "HUTCH_SHIM_BINARY", "hutch-shim", "0"}, {&env.rt, "HUTCH_RUNTIME_BINARY", "hutch-runtime", "1"}} {
		if *b.dst = os.Getenv(b.envVar); *b.dst != "" {
			continue
		}
		*b.dst = filepath.Join(base, "bin", b.name)
		if err := build(*b.dst, b.name, b.cgo); err != nil {
			return err
		}
	}
	return makeRootfs(env.rootfs)
}

// build builds ./cmd/name as make build does.
func build(out, name, cgo string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	tags, ldflags := "exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp", ""
	if name == "hutch-runtime" {
		tags, ldflags = tags+" osusergo netgo seccomp", "-linkmode external -extldflags -static"
	}
	cmd := exec.Command("go", "build", "-tags", tags, "-ldflags", ldflags, "-o", out, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", name, err, b)
	}
	return nil
}

// makeRootfs builds a minimal image from the static busybox (Debian's
// busybox-static).
func makeRootfs(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	src, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("busybox-static is needed: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "busybox"), src, 0o755); err != nil {
		return err
	}
	for _, n := range []string{"sh", "echo", "cat", "true", "sleep", "tty", "stty", "env", "id", "ls", "kill", "wc", "head", "yes"} {
		if err := os.Symlink("busybox", filepath.Join(dir, "bin", n)); err != nil {
			return err
		}
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("root:x:0:0:root:/:/bin/sh\n"), 0o644)
}
