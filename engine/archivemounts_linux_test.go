package engine

import (
	"os"
	"path/filepath"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/archive"
)

func TestMountOf(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/data", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	root, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	mounts := []containertypes.MountPoint{
		{Type: mounttypes.TypeVolume, Destination: "/data", Source: "/vols/v/_data"},
		{Type: mounttypes.TypeBind, Destination: "/data/sub", Source: "/host/sub"},
		{Type: mounttypes.TypeTmpfs, Destination: "/tmp"},
		{Type: mounttypes.TypeBind, Destination: "/datum", Source: "/host/datum"},
	}
	for abs, want := range map[string][2]string{
		"/data":       {"/vols/v/_data", "/"},
		"/data/":      {"/vols/v/_data", "/"},
		"/data/f":     {"/vols/v/_data", "/f"},
		"/data/d/":    {"/vols/v/_data", "/d/"},
		"/data/d/.":   {"/vols/v/_data", "/d/."},
		"/data/sub/x": {"/host/sub", "/x"},
		"/data/subx":  {"/vols/v/_data", "/subx"},
		"/link/f":     {"/vols/v/_data", "/f"},
		"/datum/y":    {"/host/datum", "/y"},
		"/tmp/x":      {"", ""},
		"/etc/passwd": {"", ""},
		"/":           {"", ""},
		"/dat":        {"", ""},
	} {
		mp, inner := mountOf(mounts, root, abs)
		got := [2]string{"", inner}
		if mp != nil {
			got[0] = mp.Source
		}
		if got != want {
			t.Errorf("mountOf(%q) = %q, want %q", abs, got, want)
		}
	}
}
