package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/hutch-engine/hutch/storage/testimage"
)

// registry is Debian's docker-registry on a free loopback port: the
// daemon's registry mirror for docker.io, so that the suite's pulls of
// Docker Hub images reach the stand-ins.
type registry struct {
	Addr string
	cmd  *exec.Cmd
}

func startRegistry(ctx context.Context, dir string) (*registry, error) {
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		return nil, fmt.Errorf("docker-registry is not installed (contrib/test/setup-root.sh installs it): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"+
		"storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n  secret: hutch-compat\n",
		filepath.Join(dir, "registry"), addr)
	cfgPath := filepath.Join(dir, "registry.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	r := &registry{Addr: addr, cmd: exec.Command(bin, "serve", cfgPath)}
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			r.Stop()
			return nil, fmt.Errorf("docker-registry did not come up on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *registry) Stop() {
	if r.cmd.Process != nil {
		r.cmd.Process.Kill()
		r.cmd.Wait()
	}
}

// standIn is one of the suite's frozen images: the name the tests use, the
// Docker Hub repository and tag it is pulled as, and how it is made.
type standIn struct {
	Name string // as the tests use it
	Repo string // library/busybox, arm32v7/hello-world
	Tag  string
	make func() (v1.Image, error)
	// index, instead of make, makes a multi-platform image; such
	// stand-ins are only pulled by the tests themselves.
	index func() (v1.ImageIndex, error)
}

// standIns mirror the suite's frozen image list (internal/testutil/
// environment's frozenImages and the Dockerfile's download list): Docker
// Hub-like busybox for busybox:latest and busybox:glibc (Debian's static
// busybox is built on glibc), hello-world for amd64 and, by platform alone,
// arm64 and arm/v7, and a busybox under the name debian:trixie-slim (the
// tests that use it install packages from the internet, which these hosts
// do not reach). alpine:latest is not frozen: tests pull it for several
// platforms, as a multi-platform busybox here.
var standIns = []standIn{
	{"busybox:latest", "library/busybox", "latest", testimage.DockerBusybox, nil},
	{"busybox:glibc", "library/busybox", "glibc", testimage.DockerBusybox, nil},
	{"debian:trixie-slim", "library/debian", "trixie-slim", testimage.DockerBusybox, nil},
	{"hello-world:latest", "library/hello-world", "latest", testimage.HelloWorld, nil},
	{"hello-world:amd64", "library/hello-world", "amd64", testimage.HelloWorld, nil},
	{"hello-world:arm64", "library/hello-world", "arm64", platform(testimage.HelloWorld, "arm64", "v8"), nil},
	{"arm32v7/hello-world:latest", "arm32v7/hello-world", "latest", platform(testimage.HelloWorld, "arm", "v7"), nil},
	{Name: "alpine:latest", Repo: "library/alpine", Tag: "latest", index: alpine},
}

// alpine is busybox under the platforms of Docker Hub's alpine image,
// with alpine's history: one layer, then CMD ["/bin/sh"].
func alpine() (v1.ImageIndex, error) {
	var imgs []v1.Image
	for _, p := range [][2]string{{"386", ""}, {"amd64", ""}, {"arm", "v6"}, {"arm", "v7"}, {"arm64", "v8"}, {"ppc64le", ""}, {"riscv64", ""}, {"s390x", ""}} {
		img, err := platform(testimage.DockerBusybox, p[0], p[1])()
		if err == nil {
			img, err = withShellCmd(img)
		}
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	return testimage.Index(imgs...)
}

// withShellCmd ends img's history as alpine's does: CMD ["/bin/sh"], a
// step without a layer.
func withShellCmd(img v1.Image) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config.Cmd = []string{"/bin/sh"}
	cf.History = append(cf.History, v1.History{Created: cf.Created, CreatedBy: `/bin/sh -c #(nop)  CMD ["/bin/sh"]`, EmptyLayer: true})
	return mutate.ConfigFile(img, cf)
}

func platform(mk func() (v1.Image, error), arch, variant string) func() (v1.Image, error) {
	return func() (v1.Image, error) {
		img, err := mk()
		if err != nil {
			return nil, err
		}
		return testimage.ForPlatform(img, "linux", arch, variant)
	}
}

// pushStandIns builds every stand-in and pushes it to the registry under
// its Docker Hub repository.
func pushStandIns(ctx context.Context, addr string) error {
	for _, s := range standIns {
		ref := addr + "/" + s.Repo + ":" + s.Tag
		if s.index != nil {
			idx, err := s.index()
			if err == nil {
				err = testimage.PushIndex(ctx, ref, idx)
			}
			if err != nil {
				return fmt.Errorf("stand-in %s: %w", s.Name, err)
			}
			continue
		}
		img, err := s.make()
		if err == nil {
			err = testimage.Push(ctx, ref, img)
		}
		if err != nil {
			return fmt.Errorf("stand-in %s: %w", s.Name, err)
		}
	}
	return nil
}
