package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	"go.podman.io/storage/pkg/reexec"
)

// TestMain serves the store's re-executions (layer extraction runs this
// binary as "storage-untar") and, when started by an unprivileged user
// outside a user namespace, re-runs the tests inside one that maps only
// that user to root: the single-UID mode hutch falls back to without
// subuid ranges. Nothing is skipped for lack of root.
func TestMain(m *testing.M) {
	if reexec.Init() {
		return
	}
	// containers/image reports retries through logrus at info level.
	logrus.SetLevel(logrus.WarnLevel)
	if os.Geteuid() != 0 {
		os.Exit(runInUserNS())
	}
	os.Exit(m.Run())
}

func runInUserNS() int {
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "storage tests: cannot re-run in a user namespace: %v\n", err)
		return 1
	}
	return 0
}

// singleUID reports whether this process's user namespace maps one uid
// only, as `unshare --map-root-user` and runInUserNS do.
func singleUID(t testing.TB) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total == 1
}

// newStore opens a store in fresh temporary directories, in the mode this
// process can run: single-UID inside a one-uid user namespace.
func newStore(t testing.TB, driver string) *Store {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{
		GraphRoot: dir + "/graph",
		RunRoot:   dir + "/run",
		Driver:    driver,
		SingleUID: singleUID(t),
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
