package wire

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestExitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "exit.json")
	if _, err := ReadExit(path); !errdefs.IsNotFound(err) {
		t.Fatalf("missing exit file: %v, want not found", err)
	}
	want := ExitStatus{ExitCode: 143, FinishedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), StartedAt: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)}
	if err := WriteExit(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadExit(path)
	if err != nil || got != want {
		t.Fatalf("read %+v %v, want %+v", got, err, want)
	}
	// Overwrite: atomically replaced, no temporary files left.
	want.ExitCode = 0
	if err := WriteExit(path, want); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadExit(path); got.ExitCode != 0 {
		t.Errorf("after rewrite: %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the exit file", len(entries))
	}
	if err := os.WriteFile(path, []byte(`{"ExitCode":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExit(path); !errdefs.IsDataLoss(err) {
		t.Errorf("torn exit file: %v, want data loss", err)
	}
}
