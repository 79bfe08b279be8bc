package storage

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
)

func TestArchiveContentError(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		invalid bool
	}{
		{"layer that does not apply", errors.New("unpacking failed (error: exit status 1; output: invalid whiteout path)"), true},
		{"digest mismatch", fmt.Errorf("writing blob: %w", errors.New("Digest did not match")), true},
		{"already invalid", fmt.Errorf("x: %w", errdefs.ErrInvalidArgument), true},
		{"disk full", fmt.Errorf("writing blob: %w", syscall.ENOSPC), false},
		{"disk full, as the unpacker says it", errors.New("unpacking failed (error: exit status 1; output: write /a: no space left on device)"), false},
		{"quota", errors.New("output: disk quota exceeded"), false},
		{"read-only", fmt.Errorf("x: %w", syscall.EROFS), false},
		{"canceled", fmt.Errorf("copying: %w", context.Canceled), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := archiveContentError(tt.err)
			if got.Error() != tt.err.Error() {
				t.Errorf("message %q, want %q", got, tt.err)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("%v does not wrap %v", got, tt.err)
			}
			if errdefs.IsInvalidArgument(got) != tt.invalid {
				t.Errorf("%v: invalid argument %v, want %v", got, errdefs.IsInvalidArgument(got), tt.invalid)
			}
		})
	}
	if archiveContentError(nil) != nil {
		t.Error("nil became an error")
	}
	if err := invalidArchive(fmt.Errorf("copying to a temporary file: %w", syscall.ENOSPC)); errdefs.IsInvalidArgument(err) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("a full disk reading the archive: %v", err)
	}
}
