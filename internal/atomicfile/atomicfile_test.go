package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, durable := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "f.json")
		if err := os.WriteFile(p, []byte("old content, longer"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Write(p, []byte("new"), 0o600, durable); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "new" {
			t.Errorf("durable %v: content %q, %v", durable, b, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("durable %v: mode %v, %v", durable, fi.Mode(), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("durable %v: temporary files left: %v", durable, ents)
		}
	}
}

// A write that fails leaves the old content and no temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "target")
	if err := os.Mkdir(p, 0o700); err != nil { // a directory cannot be renamed over
		t.Fatal(err)
	}
	if err := Write(p, []byte("x"), 0o600, false); err == nil {
		t.Fatal("renaming a file over a directory succeeded")
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Errorf("the target changed: %v %v", fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}
