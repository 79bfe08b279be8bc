//go:build integration

package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hutch-engine/hutch/storage/testimage"
	"github.com/moby/moby/client"
)

// smallFSMax bounds the size of the small file system: the test pulls an
// image bigger than it, generated and pushed on every run.
const smallFSMax = 256 << 20

// smallFS returns the small file system the test user owns
// ($HUTCH_SMALL_FS, else /var/tmp/hutch-small), which
// contrib/test/setup-root.sh mounts, emptied of what an earlier run left.
// Test binaries running at once take turns on it (a lock file).
func smallFS(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HUTCH_SMALL_FS")
	if dir == "" {
		dir = "/var/tmp/hutch-small"
	}
	var st, parent syscall.Stat_t
	var fs syscall.Statfs_t
	err := errors.Join(syscall.Stat(dir, &st), syscall.Stat(filepath.Dir(dir), &parent), syscall.Statfs(dir, &fs))
	size := int64(fs.Blocks) * fs.Bsize
	switch {
	case err != nil:
		t.Fatalf("the small file system for this test is missing: %s: %v.\n"+
			"Run `bash contrib/test/setup-root.sh` as root once (it mounts a 48 MiB tmpfs owned by the test user there), or set HUTCH_SMALL_FS", dir, err)
	case st.Dev == parent.Dev:
		t.Fatalf("%s is not a file system of its own.\n"+
			"Run `bash contrib/test/setup-root.sh` as root once (it mounts a 48 MiB tmpfs owned by the test user there), or set HUTCH_SMALL_FS", dir)
	case size > smallFSMax:
		t.Fatalf("%s holds %d MiB: a full-disk test needs at most %d MiB", dir, size>>20, smallFSMax>>20)
	case int(st.Uid) != os.Getuid():
		t.Fatalf("%s belongs to uid %d, not to the test user (uid %d): run contrib/test/setup-root.sh with HUTCH_TEST_USER set to this user", dir, st.Uid, os.Getuid())
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != ".lock" {
			removeAsMapped(t, filepath.Join(dir, e.Name()))
		}
	}
	return dir
}

// freeBytes is what the file system at dir has left for the user.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return int64(fs.Bavail) * fs.Bsize
}

// A pull that fills the disk, with the data dir on a small file system:
// once with a blob bigger than the disk (the download fails) and once
// with a small blob that extracts to more than the disk (the layer fails).
// Each time the pull ends with Docker's error stream saying there is no
// space left, no image or layer of it remains, the space comes back, and
// the daemon goes on serving: busybox still runs.
func TestFullDiskDuringPull(t *testing.T) {
	small := smallFS(t)
	ref := busybox(t)
	env, rt, _ := daemonEnv(t)
	data, err := os.MkdirTemp(small, "data-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeAsMapped(t, data) })
	for i, kv := range env {
		if strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			env[i] = "XDG_DATA_HOME=" + data
		}
	}
	d := startDaemonEnv(t, env, filepath.Join(rt, "hutch.sock"))
	d.Runtime, d.Data = rt, data
	// The fault is meant for the real driver, whose layers live there.
	if driver := must(t, d, "info", "--format", "{{.Driver}}"); driver != "overlay" {
		t.Fatalf("storage driver %q on %s, want overlay (kernel overlayfs over this file system in a user namespace)\n%s", driver, small, tail(d.Log(), 20))
	}
	must(t, d, "pull", "-q", ref)
	must(t, d, "run", "--rm", ref, "true")
	// The pool's spare layers, made a second later, are there before the
	// free space is read.
	if n := len(waitSpares(t, d)); n < poolReserve {
		t.Fatalf("%d spare layers, want %d", n, poolReserve)
	}
	images := must(t, d, "images", "-qa")
	layers := storeLayers(t, d)
	free := freeBytes(t, small)
	var fs syscall.Statfs_t
	syscall.Statfs(small, &fs)
	// More than the whole file system, in 4 MiB files.
	size := (int64(fs.Blocks)*fs.Bsize + 16<<20) &^ (4<<20 - 1)
	t.Logf("%s: %d MiB, %d MiB free; images of %d MiB", small, int64(fs.Blocks)*fs.Bsize>>20, free>>20, size>>20)

	for i, tc := range []struct {
		name   string
		random bool
	}{
		{"blob bigger than the disk", true},
		{"layer bigger than the disk", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bigRef := shared.Addr + "/library/full:" + itoa(i)
			if err := testimage.Push(context.Background(), bigRef, bigImage(t, size, tc.random)); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			resp, err := d.Client(t).ImagePull(ctx, bigRef, client.ImagePullOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var msg string
			for m, err := range resp.JSONMessages(ctx) {
				if err != nil {
					t.Fatalf("pull stream: %v", err)
				}
				if m.Error != nil {
					msg = m.Error.Message
				}
			}
			resp.Close()
			t.Logf("pull error: %s", msg)
			if !strings.Contains(msg, "no space left on device") {
				t.Errorf("the pull's error does not say the disk is full: %q\n%s", msg, tail(d.Log(), 20))
			}
			// The docker CLI prints it and fails.
			out, err := d.Docker(t, "pull", bigRef)
			if err == nil || !strings.Contains(out, "no space left on device") {
				t.Errorf("docker pull on a full disk: %v\n%s", err, out)
			}
			if got := must(t, d, "images", "-qa"); got != images {
				t.Errorf("images after the failed pull: %q, want %q", got, images)
			}
			if got := sameStoreLayers(t, d, layers); !slices.Equal(got, layers) {
				t.Errorf("layers after the failed pull: %q, want %q", got, layers)
			}
			if probs := settledStoreProblems(t, d); len(probs) > 0 {
				t.Errorf("after the failed pull:\n%s", strings.Join(probs, "\n"))
			}
			// The space is given back (but for a record file that grew).
			if now := freeBytes(t, small); now < free-(256<<10) {
				t.Errorf("%d KiB free after the failed pull, %d KiB before", now>>10, free>>10)
			}
			if out, err := d.Docker(t, "run", "--rm", ref, "echo", "still serving"); err != nil || strings.TrimSpace(out) != "still serving" {
				t.Errorf("run after the failed pull: %v %s", err, out)
			}
		})
	}
}
