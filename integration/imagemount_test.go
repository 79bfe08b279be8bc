//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// mountSource imports the image that the image mount tests show: a file,
// a directory, and links that stay inside the image or lead out of it.
func mountSource(t *testing.T, d *daemon, name string) (id string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		h    tar.Header
		body string
	}{
		{tar.Header{Name: "foo", Typeflag: tar.TypeReg, Mode: 0o644}, "bar"},
		{tar.Header{Name: "subdir/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "subdir/hello", Typeflag: tar.TypeReg, Mode: 0o644}, "world"},
		{tar.Header{Name: "hack/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{tar.Header{Name: "hack/good", Typeflag: tar.TypeSymlink, Linkname: "../subdir"}, ""},
		{tar.Header{Name: "hack/bad", Typeflag: tar.TypeSymlink, Linkname: "../../../../../"}, ""},
		{tar.Header{Name: "hack/abs", Typeflag: tar.TypeSymlink, Linkname: "/subdir"}, ""},
	} {
		f.h.Size = int64(len(f.body))
		if err := tw.WriteHeader(&f.h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "src.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dockerOK(t, d, "import", p, name)
}

// engineMounts is the engine's mount table.
func engineMounts(t *testing.T, d *daemon) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", enginePID(t, d)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --mount type=image shows a local image read-only at the target: all of
// it, or the directory or file its image-subpath names, resolved inside
// the image as Docker does.
func TestImageMount(t *testing.T) {
	d, ref := pulled(t)
	mountSource(t, d, "mnt-src:1")
	img := func(target, sub string) string {
		m := "type=image,source=mnt-src:1,target=" + target
		if sub != "" {
			m += ",image-subpath=" + sub
		}
		return m
	}
	for _, tt := range []struct {
		mount string
		cmd   []string
		want  string
	}{
		{img("/image", ""), []string{"cat", "/image/foo"}, "bar"},
		{img("/image", "subdir"), []string{"ls", "/image"}, "hello"},
		// A link inside the image is followed while it stays inside.
		{img("/image", "hack/good"), []string{"ls", "/image"}, "hello"},
		{img("/image", "subdir/hello"), []string{"cat", "/image"}, "world"},
		// A file over a file of the container's image.
		{img("/etc/passwd", "subdir/hello"), []string{"cat", "/etc/passwd"}, "world"},
		{img("/image", ""), []string{"sh", "-c", "touch /image/x 2>&1; ls /image"}, "Read-only file system"},
	} {
		args := append([]string{"run", "--rm", "--mount", tt.mount, ref}, tt.cmd...)
		if out := dockerOK(t, d, args...); !strings.Contains(out, tt.want) {
			t.Errorf("%s %v: %q, want %q", tt.mount, tt.cmd, out, tt.want)
		}
	}
	// Nothing of the image stays mounted on the engine's side.
	if mi := engineMounts(t, d); strings.Contains(mi, "staged-") {
		t.Errorf("staging binds left in the engine:\n%s", mi)
	}
}

// Subpaths that lead out of the image, or that are not there, fail the
// start with Docker's words and status; one that is not relative, or an
// image that is not there, fails the create, which makes nothing.
func TestImageMountBadInput(t *testing.T) {
	d, ref := pulled(t)
	mountSource(t, d, "mnt-src:1")
	c := d.Client(t)
	ctx := context.Background()
	mounted := func(sub string) *containertypes.HostConfig {
		return &containertypes.HostConfig{Mounts: []mount.Mount{{
			Type: mount.TypeImage, Source: "mnt-src:1", Target: "/image",
			ImageOptions: &mount.ImageOptions{Subpath: sub},
		}}}
	}
	before := engineMounts(t, d)

	for _, tt := range []struct {
		name string
		hc   *containertypes.HostConfig
		is   func(error) bool
		text string
	}{
		{"backtrack", mounted("../../../../etc/passwd"), errdefs.IsInvalidArgument, `invalid mount config for type "image": subpath must be a relative path within the volume`},
		{"absolute", mounted("/etc"), errdefs.IsInvalidArgument, "subpath must be a relative path within the volume"},
		{"no image", &containertypes.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeImage, Source: "nope:1", Target: "/image"}}}, errdefs.IsNotFound, "No such image: nope:1"},
		{"no source", &containertypes.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeImage, Target: "/image"}}}, errdefs.IsInvalidArgument, "field Source must not be empty"},
	} {
		_, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}, HostConfig: tt.hc, Name: "bad-" + strings.ReplaceAll(tt.name, " ", "-"),
		})
		if err == nil || !tt.is(err) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("create, %s: %v, want %q", tt.name, err, tt.text)
		}
	}
	if out := dockerOK(t, d, "ps", "-aq"); out != "" {
		t.Errorf("containers after refused creates: %q", out)
	}

	for _, tt := range []struct {
		sub  string
		is   func(error) bool
		text string
	}{
		{"hack/bad", errdefs.IsInvalidArgument, "path concatenation escapes the base directory"},
		{"hack/abs", errdefs.IsInvalidArgument, "path concatenation escapes the base directory"},
		{"hack/bad/etc", errdefs.IsInvalidArgument, "path concatenation escapes the base directory"},
		{"not-there", errdefs.IsNotFound, "cannot access path "},
	} {
		r, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"ls", "/image"}}, HostConfig: mounted(tt.sub)})
		if err != nil {
			t.Fatalf("create, subpath %s: %v", tt.sub, err)
		}
		_, err = c.ContainerStart(ctx, r.ID, client.ContainerStartOptions{})
		if err == nil || !tt.is(err) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("start, subpath %s: %v, want %q", tt.sub, err, tt.text)
		}
		if st := dockerOK(t, d, "inspect", "-f", "{{.State.Status}}", r.ID); st == "running" {
			t.Errorf("subpath %s: the container runs", tt.sub)
		}
	}
	if after := engineMounts(t, d); after != before {
		t.Errorf("the engine's mounts changed with refused starts:\n%s\n---\n%s", before, after)
	}

	// Before API 1.48 there are no image mounts, as in Docker.
	body := `{"Image":"` + ref + `","HostConfig":{"Mounts":[{"Type":"image","Source":"mnt-src:1","Target":"/image"}]}}`
	req, err := http.NewRequest("POST", "http://hutch/v1.47/containers/create", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := unixHTTPClient(d.Socket).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var msg bytes.Buffer
	msg.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg.String(), `Mount type \"Image\" needs API v1.48 or newer`) {
		t.Errorf("API 1.47: %d %s", resp.StatusCode, msg.String())
	}
}

// One image mounted twice in a container: both listed by inspect, both
// there; the image is in use as a container's own image is (rmi refuses,
// rmi -f only untags it and the container starts again with it), until
// the container is removed.
func TestImageMountInUse(t *testing.T) {
	d, ref := pulled(t)
	imgID := mountSource(t, d, "mnt-src:1")
	id := dockerOK(t, d, "run", "-d", "--mount", "type=image,source=mnt-src:1,target=/etc/foo",
		"--mount", "type=image,src=mnt-src:1,dst=/etc/bar,readonly=false", ref, "sleep", "300")
	got := lines(dockerOK(t, d, "inspect", "-f", `{{range .Mounts}}{{.Type}} {{.Name}} {{.Source}} {{.Destination}} {{.RW}} {{.Propagation}}{{"\n"}}{{end}}`, id))
	slices.Sort(got)
	want := []string{"image mnt-src:1 " + imgID + " /etc/bar false rprivate", "image mnt-src:1 " + imgID + " /etc/foo false rprivate"}
	if !slices.Equal(got, want) {
		t.Errorf("inspect's mounts: %q, want %q", got, want)
	}
	// The store's mount of the image goes once the container has its own.
	if merged := dockerOK(t, d, "image", "inspect", "-f", "{{.GraphDriver.Data.MergedDir}}", imgID); merged != "" && strings.Contains(engineMounts(t, d), merged) {
		t.Errorf("the image stays mounted at %s in the engine", merged)
	}
	if out := dockerOK(t, d, "exec", id, "cat", "/etc/foo/foo", "/etc/bar/subdir/hello"); out != "barworld" {
		t.Errorf("the two mounts: %q", out)
	}
	if out, err := d.Docker(t, "exec", id, "touch", "/etc/bar/x"); err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write into a mount that asked for readonly=false: %v %q", err, out)
	}

	wantErr := fmt.Sprintf(`conflict: unable to remove repository reference "mnt-src:1" (must force) - container %s is using its referenced image %s`,
		id[:12], strings.TrimPrefix(imgID, "sha256:")[:12])
	if out, err := d.Docker(t, "rmi", "mnt-src:1"); err == nil || !strings.Contains(out, wantErr) {
		t.Errorf("rmi of a mounted image: %v %q, want %q", err, out, wantErr)
	}
	if out, err := d.Docker(t, "rmi", "-f", imgID); err == nil || !strings.Contains(out, "image is being used by running container "+id[:12]) {
		t.Errorf("rmi -f of an image a running container mounts: %v %q", err, out)
	}
	dockerOK(t, d, "stop", "-t", "0", id)
	if out := dockerOK(t, d, "rmi", "-f", "mnt-src:1"); out != "Untagged: mnt-src:1" {
		t.Errorf("rmi -f: %q", out)
	}
	dockerOK(t, d, "start", id)
	if out := dockerOK(t, d, "exec", id, "cat", "/etc/foo/foo"); out != "bar" {
		t.Errorf("after rmi -f and a start: %q", out)
	}
	if out := dockerOK(t, d, "image", "prune", "-f"); strings.Contains(out, imgID) {
		t.Errorf("prune took the mounted image: %q", out)
	}
	dockerOK(t, d, "rm", "-f", id)
	if out := dockerOK(t, d, "image", "prune", "-f"); !strings.Contains(out, "deleted: "+imgID) {
		t.Errorf("prune once the container is gone: %q", out)
	}
}

// A container with an image mount comes back with it after the daemon's
// restart (restart policy always), as in Docker, mounted anew.
func TestImageMountDaemonRestart(t *testing.T) {
	ref := busybox(t)
	env, rt, _ := daemonEnv(t)
	sock := filepath.Join(rt, "hutch.sock")
	d := startDaemonEnv(t, env, sock)
	dockerOK(t, d, "pull", "-q", ref)
	id := dockerOK(t, d, "run", "-d", "--restart", "always", "--stop-timeout", "1",
		"--mount", "type=image,source="+ref+",target=/image,image-subpath=bin", ref, "sleep", "300")
	if out := dockerOK(t, d, "exec", id, "ls", "/image"); !strings.Contains(out, "busybox") {
		t.Fatalf("the image's /bin: %q", out)
	}
	d.Stop()
	d = startDaemonEnv(t, env, sock)
	waitFor(t, func() bool {
		out, _ := d.Docker(t, "inspect", "-f", "{{.State.Running}}", id)
		return strings.TrimSpace(out) == "true"
	})
	if got := dockerOK(t, d, "inspect", "-f", "{{range .Mounts}}{{.Type}} {{.Destination}} {{.RW}};{{end}}", id); got != "image /image false;" {
		t.Errorf("mounts after the restart: %q", got)
	}
	if out := dockerOK(t, d, "exec", id, "ls", "/image"); !strings.Contains(out, "busybox") {
		t.Errorf("the image's /bin after the restart: %q", out)
	}
	if mi := engineMounts(t, d); strings.Contains(mi, "staged-") {
		t.Errorf("staging binds left in the engine:\n%s", mi)
	}
	dockerOK(t, d, "rm", "-f", id)
}
