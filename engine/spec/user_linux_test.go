package spec

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestResolveUser(t *testing.T) {
	root := newRootfs(t)
	tests := []struct {
		spec     string
		groupAdd []string
		want     specs.User
		err      string
	}{
		{spec: "", want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
		{spec: "root", want: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
		{spec: "app", want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 29}}},
		{spec: "app:staff", want: specs.User{UID: 1000, GID: 50, AdditionalGids: []uint32{50}}},
		{spec: "app:50", want: specs.User{UID: 1000, GID: 50, AdditionalGids: []uint32{50}}},
		{spec: "1000", want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 29}}},
		{spec: "4242", want: specs.User{UID: 4242, GID: 0, AdditionalGids: []uint32{0}}},
		{spec: "4242:4343", want: specs.User{UID: 4242, GID: 4343, AdditionalGids: []uint32{4343}}},
		{spec: "nobody", groupAdd: []string{"staff", "7", "audio"}, want: specs.User{UID: 65534, GID: 65534, AdditionalGids: []uint32{65534, 7, 29, 50}}},
		{spec: "app", groupAdd: []string{"wheel"}, want: specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 29}}},
		{spec: "x", err: "unable to find user x: no matching entries in passwd file"},
		{spec: "app:nogroup2", err: "unable to find group nogroup2: no matching entries in group file"},
		{spec: "root", groupAdd: []string{"nope"}, err: "unable to find group nope: no matching entries in group file"},
		{spec: "99999999999", err: "uids and gids must be in range 0-2147483647"},
	}
	for _, tt := range tests {
		t.Run(tt.spec+"+"+strings.Join(tt.groupAdd, ","), func(t *testing.T) {
			got, err := ResolveUser(root, tt.spec, tt.groupAdd, false)
			if tt.err != "" {
				// moby/sys/user's message, then the class, which the API's
				// answer leaves out (apiserver's errorMessage), as Docker's.
				if !errors.Is(err, errdefs.ErrInvalidArgument) || err.Error() != tt.err+": invalid argument" {
					t.Fatalf("err = %v, want invalid argument %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.UID != tt.want.UID || got.GID != tt.want.GID || !slices.Equal(got.AdditionalGids, tt.want.AdditionalGids) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolveUserMissingFiles(t *testing.T) {
	root := t.TempDir()
	u, err := ResolveUser(root, "1234:5678", nil, false)
	if err != nil || u.UID != 1234 || u.GID != 5678 {
		t.Fatalf("numeric user without passwd: %+v, %v", u, err)
	}
	if u, err := ResolveUser(root, "", nil, false); err != nil || u.UID != 0 || u.GID != 0 {
		t.Fatalf("default user without passwd: %+v, %v", u, err)
	}
	_, err = ResolveUser(root, "app", nil, false)
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "unable to find user app: no matching entries in passwd file") {
		t.Fatalf("named user without passwd: %v", err)
	}
}

// The image's /etc/passwd and /etc/group must resolve inside the rootfs:
// a link to a host path names that path inside the rootfs.
func TestResolveUserSymlinksStayInRoot(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{
		"passwd": "evil:x:4242:4242::/:/bin/sh\n",
		"group":  "evil:x:4242:evil\n",
	})
	tests := []struct {
		name  string
		files map[string]string
		// user resolves only if the link stays in the rootfs
		user    string
		wantUID uint32
		wantErr bool
	}{
		{
			name:    "absolute link to host file",
			files:   map[string]string{"etc/passwd": "->" + filepath.Join(outside, "passwd")},
			user:    "evil",
			wantErr: true,
		},
		{
			name:    "relative link climbing out",
			files:   map[string]string{"etc/passwd": "->../../../../../../../../" + filepath.Join(outside, "passwd")},
			user:    "evil",
			wantErr: true,
		},
		{
			name:    "directory link to host",
			files:   map[string]string{"etc": "->" + outside},
			user:    "evil",
			wantErr: true,
		},
		{
			name: "absolute link inside the image",
			files: map[string]string{
				"etc/passwd":          "->/usr/share/passwd",
				"usr/share/passwd":    "inside:x:77:77::/:/bin/sh\n",
				"usr/share/unrelated": "",
			},
			user:    "inside",
			wantUID: 77,
		},
		{
			name: "host-looking absolute link that exists in the image",
			files: map[string]string{
				"etc/passwd": "->" + filepath.Join(outside, "passwd"),
				strings.TrimPrefix(outside, "/") + "/passwd": "evil:x:99:99::/:/bin/sh\n",
			},
			user:    "evil",
			wantUID: 99,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			u, err := ResolveUser(root, tt.user, nil, false)
			if tt.wantErr {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("resolved %+v through a link out of the rootfs (err %v)", u, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.UID != tt.wantUID {
				t.Errorf("uid = %d, want %d", u.UID, tt.wantUID)
			}
		})
	}
}

func TestResolveUserOddFiles(t *testing.T) {
	t.Run("fifo does not block", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"etc/group": testGroup})
		if err := syscall.Mkfifo(filepath.Join(root, "etc/passwd"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ResolveUser(root, "root", nil, false)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"etc/passwd/x": ""})
		if _, err := ResolveUser(root, "root", nil, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("symlink loop", func(t *testing.T) {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"etc/passwd": "->/etc/passwd"})
		if _, err := ResolveUser(root, "root", nil, false); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing rootfs", func(t *testing.T) {
		if _, err := ResolveUser(filepath.Join(t.TempDir(), "gone"), "root", nil, false); err == nil {
			t.Fatal("no error for a missing rootfs")
		}
	})
}

func TestResolveUserSingleUID(t *testing.T) {
	root := newRootfs(t)
	tests := []struct {
		spec     string
		groupAdd []string
		err      bool
	}{
		{spec: ""},
		{spec: "root"},
		{spec: "0:0"},
		{spec: "root", groupAdd: []string{"root"}},
		{spec: "app", err: true},
		{spec: "1000", err: true},
		{spec: "0:50", err: true},
		{spec: "root", groupAdd: []string{"staff"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec+"+"+strings.Join(tt.groupAdd, ","), func(t *testing.T) {
			u, err := ResolveUser(root, tt.spec, tt.groupAdd, true)
			if tt.err {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "single-UID mode") {
					t.Fatalf("err = %v, want invalid argument explaining single-UID mode", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// root's wheel membership (gid 10) cannot be set: only gid 0.
			if u.UID != 0 || u.GID != 0 || !slices.Equal(u.AdditionalGids, []uint32{0}) {
				t.Errorf("got %+v", u)
			}
		})
	}
}
