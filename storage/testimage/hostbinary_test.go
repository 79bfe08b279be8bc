package testimage

import (
	"archive/tar"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestSharedLibs(t *testing.T) {
	for _, tc := range []struct {
		bin      string
		wantLibs bool
	}{
		{"/bin/ls", true},    // coreutils: dynamic
		{BusyboxPath, false}, // busybox-static
	} {
		t.Run(tc.bin, func(t *testing.T) {
			libs, err := sharedLibs(tc.bin)
			if err != nil {
				t.Fatal(err)
			}
			hasLibc := slices.ContainsFunc(libs, func(p string) bool { return strings.HasSuffix(p, "/libc.so.6") })
			hasLoader := slices.ContainsFunc(libs, func(p string) bool { return strings.Contains(p, "/ld-linux") })
			if got := hasLibc && hasLoader; got != tc.wantLibs {
				t.Errorf("sharedLibs(%s) = %v: libc and loader %v, want %v", tc.bin, libs, got, tc.wantLibs)
			}
		})
	}
}

func TestHostBinary(t *testing.T) {
	img, err := HostBinary("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Cmd, []string{"/bin/ls"}) || !slices.ContainsFunc(cf.Config.Env, func(e string) bool { return strings.HasPrefix(e, "LD_LIBRARY_PATH=/") }) {
		t.Errorf("config: cmd %v env %v", cf.Config.Cmd, cf.Config.Env)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			t.Errorf("%s is empty", h.Name)
		}
		names = append(names, h.Name)
	}
	for _, want := range []string{"bin/ls", "libc.so.6", "ld-linux"} {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("no %s in the layer: %v", want, names)
		}
	}
}
