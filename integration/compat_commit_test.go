//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The changes of docker commit and docker import expand $VARIABLES as
// Docker's builder does (moby's integration/image TestCommitInheritsEnv).

func TestCompatCommitChangesExpand(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	env := func(image string) []string {
		t.Helper()
		res, err := c.ImageInspect(ctx, image)
		if err != nil {
			t.Fatal(err)
		}
		return res.Config.Env
	}
	base := env(ref)
	path := ""
	for _, e := range base {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	if path == "" {
		t.Fatalf("busybox has no PATH: %q", base)
	}

	// Through the SDK, as moby's test does: each commit's ENV sees the
	// environment of the container committed.
	create := func(image string) string {
		t.Helper()
		res, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: image}})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	first, err := c.ContainerCommit(ctx, create(ref), client.ContainerCommitOptions{Changes: []string{"ENV PATH=/bin"}, Reference: "inherits:1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := env(first.ID); !slices.Equal(got, []string{"PATH=/bin"}) {
		t.Errorf("first commit Env = %q", got)
	}
	second, err := c.ContainerCommit(ctx, create(first.ID), client.ContainerCommitOptions{Changes: []string{"ENV PATH=/usr/bin:$PATH"}, Reference: "inherits:2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := env(second.ID); !slices.Equal(got, []string{"PATH=/usr/bin:/bin"}) {
		t.Errorf("second commit Env = %q", got)
	}

	// Through the CLI: every instruction that expands in a Dockerfile
	// expands here, earlier changes' ENV included; CMD keeps its $.
	must(t, d, "create", "--name", "src", "-e", "APP=web", ref)
	must(t, d, "commit",
		"--change", "ENV PATH=/x:$PATH HOME=/home/$APP",
		"--change", `ENV QUOTED="$APP \$APP" NEXT=${HOME}/bin`,
		"--change", "LABEL app=$APP",
		"--change", "WORKDIR /srv/$APP",
		"--change", "USER ${APP:-nobody}",
		"--change", "CMD echo $APP",
		"src", "expanded:1")
	out := must(t, d, "image", "inspect", "--format", `{{json .Config.Env}} {{.Config.Labels.app}} {{.Config.WorkingDir}} {{.Config.User}} {{json .Config.Cmd}}`, "expanded:1")
	want := `["APP=web","PATH=/x:` + path + `","HOME=/home/web","QUOTED=web $APP","NEXT=/home/web/bin"] web /srv/web web ["/bin/sh","-c","echo $APP"]`
	if out != want {
		t.Errorf("committed config = %s\nwant               %s", out, want)
	}
	if got := must(t, d, "run", "--rm", "--user", "0", "expanded:1", "sh", "-c", "echo $PATH"); got != "/x:"+path {
		t.Errorf("PATH in a container of the commit = %q", got)
	}

	// docker import starts from an empty config: unset variables are "";
	// as in a Dockerfile, an ENV's variables are those before it.
	tarPath := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(tarPath, rootfsTar(t, false), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, d, "import", "--change", "ENV A=1 B=${A}2", "--change", "ENV C=${A}3 D=x$UNSET", tarPath, "imported:1")
	if got := env("imported:1"); !slices.Equal(got, []string{"A=1", "B=2", "C=13", "D=x"}) {
		t.Errorf("import Env = %q", got)
	}
}
