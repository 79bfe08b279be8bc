package shim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
)

func TestValidateOptions(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "hutch-shim")
	rt := filepath.Join(dir, "bin", "hutch-runtime")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{bin, rt} {
		if err := os.WriteFile(b, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	good := StartOptions{
		ID: "abc", BundleDir: filepath.Join(dir, "b"), StateDir: filepath.Join(dir, "state"),
		SocketPath: filepath.Join(dir, "s.sock"), LogPath: filepath.Join(dir, "l"), ExitFile: filepath.Join(dir, "e"),
		ShimBinary: bin, RuntimeBinary: rt,
	}
	tests := []struct {
		name  string
		mod   func(*StartOptions)
		class error
	}{
		{"good", func(*StartOptions) {}, nil},
		{"empty id", func(o *StartOptions) { o.ID = "" }, errdefs.ErrInvalidArgument},
		{"id with slash", func(o *StartOptions) { o.ID = "a/b" }, errdefs.ErrInvalidArgument},
		{"relative path", func(o *StartOptions) { o.LogPath = "log" }, errdefs.ErrInvalidArgument},
		{"state inside the binary's dir", func(o *StartOptions) { o.StateDir = filepath.Join(dir, "bin", "state") }, errdefs.ErrInvalidArgument},
		{"binary's dir inside state", func(o *StartOptions) { o.StateDir = dir }, errdefs.ErrInvalidArgument},
		{"long socket path", func(o *StartOptions) { o.SocketPath = "/" + string(make([]byte, 120)) }, errdefs.ErrInvalidArgument},
		{"missing shim binary", func(o *StartOptions) { o.ShimBinary = filepath.Join(dir, "nope") }, errdefs.ErrFailedPrecondition},
		{"missing runtime binary", func(o *StartOptions) { o.RuntimeBinary = filepath.Join(dir, "nope") }, errdefs.ErrFailedPrecondition},
		{"relative runtime binary", func(o *StartOptions) { o.RuntimeBinary = "hutch-runtime" }, errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.mod(&o)
			err := o.validate()
			if tc.class == nil && err != nil || tc.class != nil && !errors.Is(err, tc.class) {
				t.Errorf("validate: %v, want %v", err, tc.class)
			}
		})
	}
}

func TestNested(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/a/b", "/a/b", true},
		{"/a", "/a/b", true},
		{"/a/b/c", "/a", true},
		{"/a/b", "/a/bc", false},
		{"/x/bin", "/run/user/1/hutch", false},
	}
	for _, tc := range tests {
		if got := nested(tc.a, tc.b); got != tc.want {
			t.Errorf("nested(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
