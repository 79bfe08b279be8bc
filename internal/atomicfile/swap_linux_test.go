package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSwap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	spare := filepath.Join(dir, TempPrefix+"r.json-spare")
	inodes := map[uint64]bool{}
	prev := ""
	for i, content := range []string{"first", "second, longer than the first", "third", "", "fifth"} {
		if err := Swap(p, []byte(content), 0o600); err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("swap %d: content %q, %v; want %q", i, b, err, content)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("swap %d: mode %v, %v", i, fi.Mode(), err)
		}
		inodes[fi.Sys().(*syscall.Stat_t).Ino] = true
		if i > 0 {
			// The spare keeps the previous content, whole.
			if b, err := os.ReadFile(spare); err != nil || string(b) != prev {
				t.Errorf("swap %d: spare holds %q, %v; want %q", i, b, err, prev)
			}
		}
		prev = content
	}
	if len(inodes) != 2 {
		t.Errorf("the file had %d inodes in 5 writes, want 2 (the file and its spare, exchanged)", len(inodes))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory holds %d entries, want the file and its spare", len(ents))
	}
}

// A spare that is not a regular file (here a link planted to a file
// elsewhere) is refused, and neither the file nor the link's target
// changes.
func TestSwapSpareNotAFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, TempPrefix+"r.json-spare")); err != nil {
		t.Fatal(err)
	}
	if err := Swap(p, []byte("new"), 0o600); err == nil {
		t.Fatal("Swap through a symbolic link succeeded")
	}
	for path, want := range map[string]string{p: "old", victim: "victim"} {
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("%s holds %q, want %q", path, b, want)
		}
	}
}
