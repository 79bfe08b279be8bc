package storage

import (
	"errors"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestNormalizeReference(t *testing.T) {
	tests := []struct {
		fromImage, tag string
		want           string
	}{
		{"busybox", "", "docker.io/library/busybox:latest"},
		{"busybox", "1.36", "docker.io/library/busybox:1.36"},
		{"busybox:1.36", "", "docker.io/library/busybox:1.36"},
		{"busybox:1.36", "latest", "docker.io/library/busybox:latest"},
		{"busybox:", "", "docker.io/library/busybox:latest"},
		{"busybox", testDigest, "docker.io/library/busybox@" + testDigest},
		{"busybox@" + testDigest, "", "docker.io/library/busybox@" + testDigest},
		{"busybox:1.36@" + testDigest, "", "docker.io/library/busybox@" + testDigest},
		{"user/app", "", "docker.io/user/app:latest"},
		{"docker.io/library/busybox", "", "docker.io/library/busybox:latest"},
		{"localhost:5000/team/app", "v2", "localhost:5000/team/app:v2"},
		{"127.0.0.1:5000/busybox", "", "127.0.0.1:5000/busybox:latest"},
		{"quay.io/org/img:tag", "", "quay.io/org/img:tag"},
	}
	for _, tt := range tests {
		t.Run(tt.fromImage+"+"+tt.tag, func(t *testing.T) {
			got, err := NormalizeReference(tt.fromImage, tt.tag)
			if err != nil {
				t.Fatalf("NormalizeReference(%q, %q): %v", tt.fromImage, tt.tag, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeReference(%q, %q) = %q, want %q", tt.fromImage, tt.tag, got, tt.want)
			}
			// What NormalizeReference returns, Pull accepts unchanged.
			named, err := parsePullReference(got)
			if err != nil || named.String() != got {
				t.Errorf("parsePullReference(%q) = %v, %v", got, named, err)
			}
		})
	}
}

func TestNormalizeReferenceErrors(t *testing.T) {
	tests := []struct {
		fromImage, tag string
		class          error
		message        string
	}{
		{"", "", errdefs.ErrInvalidArgument, "invalid reference format"},
		{"Busybox", "", errdefs.ErrInvalidArgument, "invalid reference format: repository name (library/Busybox) must be lowercase"},
		{"busybox", "bad tag!", errdefs.ErrInvalidArgument, "invalid tag format"},
		{"busy box", "", errdefs.ErrInvalidArgument, "invalid reference format"},
		{"a_b.c/d", "", errdefs.ErrInvalidArgument, `invalid reference format: "a_b.c/d" names no registry host`},
		{"scratch", "", errdefs.ErrPermissionDenied, "'scratch' is a reserved name"},
	}
	for _, tt := range tests {
		t.Run(tt.fromImage+"+"+tt.tag, func(t *testing.T) {
			_, err := NormalizeReference(tt.fromImage, tt.tag)
			if !errors.Is(err, tt.class) {
				t.Fatalf("error %v is not %v", err, tt.class)
			}
			if err.Error() != tt.message {
				t.Errorf("message %q, want %q", err.Error(), tt.message)
			}
		})
	}
}

func TestPullReferenceForms(t *testing.T) {
	tests := []struct {
		ref, id, path, familiar string
	}{
		{"busybox", "latest", "library/busybox", "busybox:latest"},
		{"docker.io/library/busybox:1.36", "1.36", "library/busybox", "busybox:1.36"},
		{"busybox@" + testDigest, "docker.io/library/busybox@" + testDigest, "library/busybox", "busybox@" + testDigest},
		{"127.0.0.1:5000/team/app:v1", "v1", "team/app", "127.0.0.1:5000/team/app:v1"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			named, err := parsePullReference(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := tagOrDigest(named); got != tt.id {
				t.Errorf("tagOrDigest = %q, want %q", got, tt.id)
			}
			if got := repoPath(named); got != tt.path {
				t.Errorf("repoPath = %q, want %q", got, tt.path)
			}
			if got := reference.FamiliarString(named); got != tt.familiar {
				t.Errorf("FamiliarString = %q, want %q", got, tt.familiar)
			}
		})
	}
	if _, err := parsePullReference(strings.Repeat("a", 64)); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("an image ID is not a pull reference: got %v", err)
	}
}
