package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

func TestOpenProbesAndRemembersDriver(t *testing.T) {
	dir := t.TempDir()
	opts := Options{GraphRoot: dir + "/graph", RunRoot: dir + "/run", SingleUID: singleUID(t)}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	driver := s.Driver()
	t.Logf("probed driver %q, status %q (single uid: %v)", driver, s.DriverStatus(), opts.SingleUID)
	if driver != DriverOverlay && driver != DriverFuse && driver != DriverVFS {
		t.Fatalf("Driver() = %q", driver)
	}
	if driver == DriverOverlay {
		keys := []string{}
		for _, kv := range s.DriverStatus() {
			keys = append(keys, kv[0])
			if kv[1] == "" {
				t.Errorf("DriverStatus %q is empty", kv[0])
			}
		}
		if got := strings.Join(keys, ","); got != "Backing Filesystem,Supports d_type,Using metacopy,Native Overlay Diff,userxattr" {
			t.Errorf("DriverStatus keys = %s", got)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rec, err := os.ReadFile(filepath.Join(opts.GraphRoot, driverRecordFile)); err != nil || strings.TrimSpace(string(rec)) != driver {
		t.Errorf("driver record = %q, %v; want %q", rec, err, driver)
	}
	assertNoMounts(t, dir)

	// The recorded driver is used again without probing.
	s, err = Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Driver() != driver {
		t.Errorf("reopened with %q, recorded %q", s.Driver(), driver)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoMounts(t, dir)
}

func TestOpenForcedVFS(t *testing.T) {
	s := newStore(t, "vfs")
	if s.Driver() != DriverVFS {
		t.Fatalf("Driver() = %q", s.Driver())
	}
	if _, err := os.Stat(filepath.Join(s.GraphRoot(), "overlay")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("forcing vfs created overlay state: %v", err)
	}
}

func TestOpenInvalid(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts Options
	}{
		{"no graph root", Options{RunRoot: dir}},
		{"no run root", Options{GraphRoot: dir}},
		{"relative", Options{GraphRoot: "graph", RunRoot: dir}},
		{"unknown driver", Options{GraphRoot: dir + "/g", RunRoot: dir + "/r", Driver: "btrfs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Open(context.Background(), tt.opts); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Errorf("Open(%+v) = %v, want invalid argument", tt.opts, err)
			}
		})
	}
}

// overlayDir mounts an overlayfs for the test: native overlay cannot use a
// directory on it as upper layer, which makes the probe fail for real.
func overlayDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	merged := filepath.Join(dir, "merged")
	data := "lowerdir=" + dir + "/lower,upperdir=" + dir + "/upper,workdir=" + dir + "/work"
	if !isInitialUserNS(t) {
		data += ",userxattr"
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, data); err != nil {
		t.Fatalf("mounting the overlay the test needs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(merged, unix.MNT_DETACH) })
	return merged
}

// TestNativeOverlayProbeLeavesNothing checks that the failed native probe
// removed the directories and mounts it made.
func TestNativeOverlayProbeLeavesNothing(t *testing.T) {
	merged := overlayDir(t)
	opts := Options{GraphRoot: merged + "/graph", RunRoot: t.TempDir() + "/run"}
	for _, d := range []string{opts.GraphRoot, opts.RunRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := probeNativeOverlay(opts); err == nil {
		t.Fatal("native overlay on top of overlayfs was accepted")
	}
	for _, d := range []string{opts.GraphRoot + "/overlay", opts.RunRoot + "/overlay"} {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("failed probe left %s (%v)", d, err)
		}
	}
	assertNoMounts(t, opts.GraphRoot)
}

// TestOpenFallsBack opens a store where native overlay fails: the next
// driver in the order is chosen and works.
func TestOpenFallsBack(t *testing.T) {
	merged := overlayDir(t)
	dir := t.TempDir()
	s, err := Open(context.Background(), Options{GraphRoot: merged + "/graph", RunRoot: dir + "/run", SingleUID: singleUID(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("on overlayfs: driver %s, status %q", s.Driver(), s.DriverStatus())
	switch s.Driver() {
	case DriverFuse:
		if got := s.DriverStatus(); len(got) != 3 || got[2][1] == "" {
			t.Errorf("DriverStatus = %q", got)
		}
	case DriverVFS:
		if _, err := os.Lstat(merged + "/graph/overlay"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the failed overlay attempts left %v", err)
		}
	default:
		t.Errorf("Driver() = %s on overlayfs", s.Driver())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoMounts(t, merged+"/graph")
}

// TestFuseOverlayProbeLeavesNothing runs the fuse-overlayfs probe; whether
// it works here depends on /dev/fuse, but either way nothing stays mounted
// or on disk.
func TestFuseOverlayProbeLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	err := probeFuseOverlay(context.Background(), "/usr/bin/fuse-overlayfs", dir)
	t.Logf("fuse-overlayfs probe: %v", err)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("probe left %v", entries)
	}
	assertNoMounts(t, dir)
}

func isInitialUserNS(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), "4294967295")
}

func assertNoMounts(t *testing.T, root string) {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(root))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		t.Errorf("still mounted under %s: %s (%s)", root, i.Mountpoint, i.FSType)
	}
}
