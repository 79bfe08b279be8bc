package volume

import (
	"golang.org/x/sys/unix"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestStore(t *testing.T) {
	root := filepath.Join(t.TempDir(), "volumes")
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	v, made, err := s.Create("data", map[string]string{"a": "b"}, nil, false)
	if err != nil || !made {
		t.Fatalf("Create = %v, %v", made, err)
	}
	if v.Mountpoint != filepath.Join(root, "data", "_data") || v.CreatedAt.IsZero() {
		t.Errorf("volume = %+v", v)
	}
	if err := os.WriteFile(filepath.Join(v.Mountpoint, "f"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second create of the name gives the volume as it is.
	again, made, err := s.Create("data", map[string]string{"other": ""}, nil, false)
	if err != nil || made || !maps.Equal(again.Labels, map[string]string{"a": "b"}) {
		t.Errorf("second Create = %+v, %v, %v", again, made, err)
	}
	anon, _, err := s.Create("", nil, nil, true)
	if err != nil || len(anon.Name) != 64 || !anon.Anonymous {
		t.Fatalf("anonymous Create = %+v, %v", anon, err)
	}
	got, err := s.Get("data")
	if err != nil || got.Name != "data" || got.Labels["a"] != "b" || !got.CreatedAt.Equal(v.CreatedAt) {
		t.Errorf("Get = %+v, %v", got, err)
	}
	if n, err := s.Size("data"); err != nil || n != 5 {
		t.Errorf("Size = %d, %v", n, err)
	}

	// The store's state is in its files: a new Store sees the same.
	s2, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s2.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	// Sorted by name: the anonymous volume's random hex name may sort
	// before or after "data".
	names := []string{list[0].Name, list[1].Name}
	want := []string{anon.Name, "data"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("List names = %q, want %q", names, want)
	}

	if err := s2.Remove("data"); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Get("data"); !errdefs.IsNotFound(err) || err.Error() != "get data: no such volume" {
		t.Errorf("Get after Remove = %v", err)
	}
	if err := s2.Remove("data"); !errdefs.IsNotFound(err) {
		t.Errorf("second Remove = %v", err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != anon.Name {
		t.Errorf("root after Remove holds %v", entries)
	}
}

func TestStoreNames(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "-x", "_x", ".x", "a/b", "../x", "a b", "a:b", "é1"} {
		if _, _, err := s.Create(name, nil, nil, false); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "includes invalid characters for a local volume name") {
			t.Errorf("Create(%q) = %v, want invalid argument", name, err)
		}
		if _, err := s.Get(name); !errdefs.IsNotFound(err) {
			t.Errorf("Get(%q) = %v, want not found", name, err)
		}
		if err := s.Remove(name); !errdefs.IsNotFound(err) {
			t.Errorf("Remove(%q) = %v, want not found", name, err)
		}
	}
	for _, name := range []string{"ab", "A1", "my_vol.1-x", "0a"} {
		if _, _, err := s.Create(name, nil, nil, false); err != nil {
			t.Errorf("Create(%q) = %v", name, err)
		}
	}
}

// What a create or a removal interrupted by a crash left is gone at the
// next Open, and never listed.
func TestStoreOpenClears(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".new-123/_data", ".gone-456/_data/x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("root after Open holds %v", entries)
	}
	// A directory that is no volume (no volume.json) is not listed.
	if err := os.MkdirAll(filepath.Join(root, "stray", "_data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v", list, err)
	}
}

func TestLocalOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		want string // "" ok, else part of the error
	}{
		{nil, ""},
		{map[string]string{"type": "none", "o": "bind", "device": "/srv/data"}, ""},
		{map[string]string{"o": "ro,rbind", "device": "/srv/data"}, ""},
		{map[string]string{"type": "tmpfs", "device": "tmpfs"}, ""},
		{map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=10m,mode=1770,uid=1000,nosuid,noexec"}, ""},
		{map[string]string{"type": "tmpfs"}, `missing required option: "device"`},
		{map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m,bind"}, `invalid tmpfs volume option "bind"`},
		{map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "sise=1m"}, `invalid tmpfs volume option "sise=1m"`},
		{map[string]string{"type": "nfs", "o": "addr=1.2.3.4", "device": ":/x"}, "only binds"},
		{map[string]string{"type": "none", "o": "bind", "device": "rel"}, "absolute"},
		{map[string]string{"type": "none", "o": "bind"}, "absolute"},
		{map[string]string{"colour": "red"}, `invalid option: "colour"`},
	} {
		err := CheckOptions(tc.opts)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckOptions(%v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := s.Create("bv", nil, map[string]string{"type": "none", "o": "bind", "device": "/srv/data"}, false)
	if err != nil || v.Source() != "/srv/data" {
		t.Fatalf("bind volume: %+v, %v", v, err)
	}
	if got, err := s.Get("bv"); err != nil || got.Source() != "/srv/data" || got.Options["o"] != "bind" {
		t.Errorf("Get of the bind volume = %+v, %v", got, err)
	}
	tv, _, err := s.Create("tv", nil, map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=1m"}, false)
	if err != nil || !tv.Tmpfs() || tv.Source() != tv.Mountpoint {
		t.Errorf("tmpfs volume: %+v, %v", tv, err)
	}
	plain, _, _ := s.Create("plain", nil, nil, false)
	if plain.Source() != plain.Mountpoint {
		t.Errorf("plain volume source %q", plain.Source())
	}
	if _, _, err := s.Create("nodev", nil, map[string]string{"type": "tmpfs"}, false); err == nil {
		t.Error("a tmpfs volume without a device was made")
	} else if _, err := s.Get("nodev"); err == nil {
		t.Error("the refused volume exists")
	}
}

func TestTmpfsOptions(t *testing.T) {
	for _, tc := range []struct {
		o     string
		flags uintptr
		data  string
	}{
		{"", 0, ""},
		{"size=64m", 0, "size=64m"},
		{"ro,nosuid,nodev,noexec,size=1m,mode=0700", unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "size=1m,mode=0700"},
		{"ro,rw,uid=1000,gid=1000", 0, "uid=1000,gid=1000"},
		{"noexec,exec,noatime,,nr_inodes=100", unix.MS_NOATIME, "nr_inodes=100"},
	} {
		flags, data, err := tmpfsOptions(tc.o)
		if err != nil || flags != tc.flags || data != tc.data {
			t.Errorf("tmpfsOptions(%q) = %#x, %q, %v; want %#x, %q", tc.o, flags, data, err, tc.flags, tc.data)
		}
	}
}
