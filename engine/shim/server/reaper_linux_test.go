package server

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		ws   unix.WaitStatus // as wait4 encodes it
		want int
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3 << 8, 3},
		{"exit 255", 255 << 8, 255},
		{"SIGKILL", unix.WaitStatus(unix.SIGKILL), 137},
		{"SIGTERM", unix.WaitStatus(unix.SIGTERM), 143},
		{"SIGSEGV with core", unix.WaitStatus(unix.SIGSEGV) | 0x80, 139},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.ws); got != tc.want {
				t.Errorf("exitCode = %d, want %d", got, tc.want)
			}
		})
	}
}
