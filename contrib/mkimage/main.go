// Command mkimage builds hutch's test images from the static busybox of
// Debian's busybox-static package and pushes them to a registry or writes
// them as a `docker load` archive. Nothing binary lives in the repository.
//
//	mkimage -push 127.0.0.1:5000/library/busybox:latest
//	mkimage -o busybox.tar -tag busybox:latest
//	mkimage -large -push 127.0.0.1:5000/large:latest   (about 140 MB, 11 500 files)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/hutch-engine/hutch/storage/testimage"
)

func main() {
	push := flag.String("push", "", "push the image to this reference (loopback registries use plain HTTP)")
	out := flag.String("o", "", "write a docker load archive to this file")
	tag := flag.String("tag", "busybox:latest", "the name recorded in the -o archive")
	large := flag.Bool("large", false, "build the large many-file image (a source tree on busybox)")
	src := flag.String("src", "/usr/local/go/src", "the tree the -large image copies")
	layers := flag.Int("layers", 0, "build a busybox image with this many extra layers")
	user := flag.String("user", "", "registry user (with -password)")
	password := flag.String("password", "", "registry password")
	flag.Parse()
	if err := run(*push, *out, *tag, *large, *src, *layers, *user, *password); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(push, out, tag string, large bool, src string, layers int, user, password string) error {
	if push == "" && out == "" {
		return fmt.Errorf("nothing to do: give -push REF or -o FILE")
	}
	var img v1.Image
	var err error
	switch {
	case large:
		tmp, err := os.MkdirTemp("", "mkimage-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		var cleanup func()
		img, cleanup, err = testimage.Large(src, tmp)
		if err != nil {
			return err
		}
		defer cleanup()
	case layers > 0:
		img, err = testimage.MultiLayer(layers)
	default:
		img, err = testimage.Busybox()
	}
	if err != nil {
		return err
	}
	if push != "" {
		var opts []testimage.PushOption
		if user != "" {
			opts = append(opts, testimage.WithBasicAuth(user, password))
		}
		if err := testimage.Push(context.Background(), push, img, opts...); err != nil {
			return err
		}
		fmt.Println("pushed", push)
	}
	if out != "" {
		ref, err := name.NewTag(tag)
		if err != nil {
			return err
		}
		if err := tarball.WriteToFile(out, ref, img); err != nil {
			return err
		}
		fmt.Println("wrote", out)
	}
	return nil
}
