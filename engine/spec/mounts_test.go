package spec

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
)

func TestParseBind(t *testing.T) {
	tests := []struct {
		raw  string
		want mount.Mount
		err  string
	}{
		{raw: "/src:/dst", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst"}},
		{raw: "/src/:/dst/sub/../x/", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst/x"}},
		{raw: "/src:/dst:ro", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst", ReadOnly: true}},
		{raw: "/src:/dst:rw", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst"}},
		{raw: "/src:/dst:ro,Z", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst", ReadOnly: true}},
		{raw: "/src:/dst:z,rshared", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst", BindOptions: &mount.BindOptions{Propagation: "rshared"}}},
		{raw: "/src:/dst:cached", want: mount.Mount{Type: mount.TypeBind, Source: "/src", Target: "/dst"}},
		{raw: "vol:/dst", want: mount.Mount{Type: mount.TypeVolume, Source: "vol", Target: "/dst"}},
		{raw: "./rel:/dst", want: mount.Mount{Type: mount.TypeVolume, Source: "./rel", Target: "/dst"}},
		{raw: "vol:/dst:nocopy", want: mount.Mount{Type: mount.TypeVolume, Source: "vol", Target: "/dst", VolumeOptions: &mount.VolumeOptions{NoCopy: true}}},
		{raw: "/anon", want: mount.Mount{Type: mount.TypeVolume, Target: "/anon"}},
		{raw: "", err: "invalid volume specification: ''"},
		{raw: ":/dst", err: "invalid volume specification"},
		{raw: "/dst:rw", err: "invalid volume specification"},
		{raw: "/a:/b:ro:x", err: "invalid volume specification"},
		{raw: "/a:/b:rx", err: "invalid mode: rx"},
		{raw: "/a:/b:ro,rw", err: "invalid mode: ro,rw"},
		{raw: "/a:/b:ro,", err: "invalid mode"},
		{raw: "/a:dst", err: "mount path must be absolute"},
		{raw: "/a:/", err: "destination can't be '/'"},
		{raw: "/a:/x/..", err: "destination can't be '/'"},
		{raw: "/a:/b:nocopy", err: "field VolumeOptions must not be specified"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseBind(tt.raw)
			if tt.err != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want invalid argument containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tt.want.Type || got.Source != tt.want.Source || got.Target != tt.want.Target || got.ReadOnly != tt.want.ReadOnly ||
				(got.BindOptions == nil) != (tt.want.BindOptions == nil) || (got.BindOptions != nil && *got.BindOptions != *tt.want.BindOptions) ||
				(got.VolumeOptions == nil) != (tt.want.VolumeOptions == nil) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMergeOptions(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{in: []string{"noexec", "nosuid", "nodev", "rprivate", "exec"}, want: []string{"exec", "nosuid", "nodev", "rprivate"}},
		{in: []string{"size=1m", "mode=755", "size=2m"}, want: []string{"size=2m", "mode=755"}},
		{in: []string{"ro", "rw", "shared", "rprivate"}, want: []string{"rw", "rprivate"}},
		{in: []string{"", "defaults", "nosuid"}, want: []string{"nosuid"}},
	}
	for _, tt := range tests {
		if got := mergeOptions(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("mergeOptions(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTmpfsOptions(t *testing.T) {
	tests := []struct {
		name string
		opts *mount.TmpfsOptions
		ro   bool
		want []string
		err  bool
	}{
		{name: "none", want: nil},
		{name: "read-only", ro: true, want: []string{"ro"}},
		{name: "size in m", opts: &mount.TmpfsOptions{SizeBytes: 64 << 20}, want: []string{"size=64m"}},
		{name: "size in g", opts: &mount.TmpfsOptions{SizeBytes: 2 << 30}, want: []string{"size=2g"}},
		{name: "odd size", opts: &mount.TmpfsOptions{SizeBytes: 1000}, want: []string{"size=1000"}},
		{name: "sticky mode", opts: &mount.TmpfsOptions{Mode: 0o777 | os.ModeSticky}, want: []string{"mode=1777"}},
		{name: "exec", opts: &mount.TmpfsOptions{Options: [][]string{{"exec"}}}, want: []string{"exec"}},
		{name: "bad option", opts: &mount.TmpfsOptions{Options: [][]string{{"suid"}}}, err: true},
		{name: "bad length", opts: &mount.TmpfsOptions{Options: [][]string{{}}}, err: true},
		{name: "negative size", opts: &mount.TmpfsOptions{SizeBytes: -1}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tmpfsOptions(tt.opts, tt.ro)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
