//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A create makes the working directory it was asked for, as Docker's does:
// files can be copied into it before the start, and a file in its place
// fails the create, leaving no container behind.
func TestCreateMakesWorkdir(t *testing.T) {
	d, ref := pulled(t)
	src := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(src, []byte("copied before the start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(src), 0o755)

	id := dockerOK(t, d, "create", "-w", "/new/work", ref, "sh", "-c", "pwd; cat f.txt; stat -c %u:%a /new/work")
	defer d.Docker(t, "rm", "-f", id)
	dockerOK(t, d, "cp", src, id+":/new/work/f.txt")
	if out := dockerOK(t, d, "start", "-a", id); out != "/new/work\ncopied before the start\n0:755" {
		t.Errorf("start -a = %q", out)
	}

	before := dockerOK(t, d, "ps", "-aq", "--no-trunc")
	out, err := d.Docker(t, "create", "-w", "/etc/passwd", ref, "true")
	if err == nil || !strings.Contains(out, "Cannot mkdir: /etc/passwd is not a directory") {
		t.Errorf("create with a file as workdir: %v\n%s", err, out)
	}
	if after := dockerOK(t, d, "ps", "-aq", "--no-trunc"); after != before {
		t.Errorf("the failed create left a container: %q, was %q", after, before)
	}

	// The image's own WORKDIR is not made again (the build made it), and
	// a user's process gets root's directory, as on Docker.
	if out := dockerOK(t, d, "run", "--rm", "-u", "1234", "-w", "/made/for/user", ref, "stat", "-c", "%u:%a", "."); out != "0:755" {
		t.Errorf("workdir of a user's process: %q, want root's 0:755", out)
	}
}
