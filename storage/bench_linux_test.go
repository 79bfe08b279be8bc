package storage

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// benchPull pulls ref into a fresh store per iteration; only the pull is
// timed.
func benchPull(b *testing.B, ref string) {
	b.Helper()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, err := Open(context.Background(), Options{GraphRoot: dir + "/graph", RunRoot: dir + "/run", SingleUID: singleUID(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Pull(context.Background(), ref, PullOptions{}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkPullBusybox(b *testing.B) {
	reg := newRegistry(b, "", "")
	img, err := testimage.Busybox()
	if err != nil {
		b.Fatal(err)
	}
	benchPull(b, reg.push(b, "busybox:latest", img))
}

// BenchmarkPullLarge pulls busybox plus a copy of Go's source tree (the
// benchmark's large image) and, as "untar", extracts the same layer with
// `gzip -dc | tar -x`, so the two can be compared from one run.
func BenchmarkPullLarge(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("the large image is built from Go's source tree: go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	img, cleanup, err := testimage.Large(src, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	reg := newRegistry(b, "", "")
	ref := reg.push(b, "large:latest", img)
	b.Run("pull", func(b *testing.B) { benchPull(b, ref) })
	b.Run("untar", func(b *testing.B) { benchUntar(b, img) })
}

func benchUntar(b *testing.B, img v1.Image) {
	layer := filepath.Join(b.TempDir(), "layer.tar.gz")
	f, err := os.Create(layer)
	if err != nil {
		b.Fatal(err)
	}
	if err := testimage.LayerFile(img, -1, f); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		if out, err := exec.Command("sh", "-c", `gzip -dc "$1" | tar -x -C "$2"`, "sh", layer, dir).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkImport imports the busybox rootfs (docker import) into a fresh
// store per iteration.
func BenchmarkImport(b *testing.B) {
	rootfs := rootfsTar(b, false)
	for b.Loop() {
		b.StopTimer()
		s := newStore(b, "")
		b.StartTimer()
		if _, err := s.ImportImage(context.Background(), bytes.NewReader(rootfs), imagestore.ImportConfig{}, "docker.io/library/imported:1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveLoad saves the busybox image (docker save) and loads it
// into a fresh store (docker load).
func BenchmarkSaveLoad(b *testing.B) {
	reg := newRegistry(b, "", "")
	img, err := testimage.Busybox()
	if err != nil {
		b.Fatal(err)
	}
	ref := reg.push(b, "busybox:latest", img)
	src := newStore(b, "")
	pulled, err := src.Pull(context.Background(), ref, PullOptions{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var archive bytes.Buffer
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			archive.Reset()
			if err := src.SaveImages(context.Background(), []imagestore.SaveImage{{ID: pulled.ID, Names: []string{ref}}}, &archive); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := newStore(b, "")
			b.StartTimer()
			if _, err := s.LoadImages(context.Background(), bytes.NewReader(archive.Bytes()), imagestore.LoadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
