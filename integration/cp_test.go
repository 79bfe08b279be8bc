//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// untar reads a tar into name -> header and content.
func untar(t *testing.T, r io.Reader) (map[string]*tar.Header, map[string]string) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		hdrs[h.Name], data[h.Name] = h, string(b)
	}
}

func TestCpBothWays(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", ref, "sh", "-c", "mkdir -p /data/sub && echo hello > /data/sub/f && ln -sf f /data/sub/l && echo ready && sleep 1000")
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	host := t.TempDir()

	// Out, as a tar on stdout.
	out, se, code := runIn(t, d, "", "cp", id+":/etc/passwd", "-")
	hdrs, data := untar(t, strings.NewReader(out))
	if code != 0 || hdrs["passwd"] == nil || !strings.HasPrefix(data["passwd"], "root:x:0:0:") {
		t.Fatalf("cp ctr:/etc/passwd - = %d %q %v", code, se, hdrs)
	}
	// Out, into a directory and as a new name.
	dockerOK(t, d, "cp", id+":/etc/passwd", host+"/")
	dockerOK(t, d, "cp", id+":/data", host+"/data")
	if b, _ := os.ReadFile(filepath.Join(host, "passwd")); string(b) != data["passwd"] {
		t.Errorf("copied passwd = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "data/sub/f")); string(b) != "hello\n" {
		t.Errorf("copied data/sub/f = %q", b)
	}
	if l, _ := os.Readlink(filepath.Join(host, "data/sub/l")); l != "f" {
		t.Errorf("copied symlink -> %q", l)
	}

	// In: a file keeps its mode; a directory comes whole.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(host, "script"), []byte("#!/bin/sh\necho run\n"), 0o750))
	must(os.Chmod(filepath.Join(host, "script"), 0o750))
	must(os.MkdirAll(filepath.Join(host, "tree/a/b"), 0o755))
	must(os.WriteFile(filepath.Join(host, "tree/a/b/c"), []byte("deep\n"), 0o644))
	dockerOK(t, d, "cp", filepath.Join(host, "script"), id+":/tmp/")
	dockerOK(t, d, "cp", filepath.Join(host, "tree"), id+":/tmp/tree")
	dockerOK(t, d, "cp", filepath.Join(host, "script"), id+":/tmp/renamed")
	if out := dockerOK(t, d, "exec", id, "sh", "-c", "stat -c '%a %u' /tmp/script; /tmp/renamed; cat /tmp/tree/a/b/c"); out != "750 "+itoa(os.Getuid())+"\nrun\ndeep" {
		t.Errorf("in the container: %q", out)
	}
	// -a: the container's user owns what comes in.
	user := dockerOK(t, d, "run", "-d", "-u", "1234", ref, "sleep", "1000")
	dockerOK(t, d, "cp", "-a", filepath.Join(host, "script"), user+":/tmp/")
	if out := dockerOK(t, d, "exec", user, "stat", "-c", "%u:%g", "/tmp/script"); out != "1234:1234" {
		t.Errorf("cp -a: owner %q", out)
	}

	// A stopped container's files can be copied both ways.
	dockerOK(t, d, "stop", "-t", "0", id)
	dockerOK(t, d, "cp", filepath.Join(host, "script"), id+":/data/offline")
	dockerOK(t, d, "cp", id+":/data/offline", filepath.Join(host, "back"))
	if b, _ := os.ReadFile(filepath.Join(host, "back")); !strings.Contains(string(b), "echo run") {
		t.Errorf("copied from a stopped container: %q", b)
	}
	dockerOK(t, d, "start", id)
	if out := dockerOK(t, d, "exec", id, "/data/offline"); out != "run" {
		t.Errorf("after restart: %q", out)
	}
	if out, err := d.Docker(t, "cp", id+":/nope", host); err == nil || !strings.Contains(out, "Could not find the file /nope in container "+id) {
		t.Errorf("cp of a missing file: %v %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", id, user)
}

// TestCpStaysInRootfs: links in a container cannot make cp read or write
// files of the host.
func TestCpStaysInRootfs(t *testing.T) {
	d, ref := pulled(t)
	host := t.TempDir()
	secret := filepath.Join(host, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"ln -s /../../../../etc /escape",
		"ln -s /etc/shadow /x",
		"ln -s " + host + " /hostdir",
		"ln -s ../../../../../../../../../.." + host + " /reldir",
		"ln -s " + secret + " /hostsecret",
		"echo ready", "sleep 1000",
	}, "; ")
	id := dockerOK(t, d, "run", "-d", ref, "sh", "-c", script)
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })

	// Reading through the links finds the container's files or nothing.
	out, _, code := runIn(t, d, "", "cp", id+":/escape/passwd", "-")
	_, data := untar(t, strings.NewReader(out))
	if code != 0 || !strings.HasPrefix(data["passwd"], "root:x:0:0:") || strings.Contains(data["passwd"], "hutchtest") {
		t.Errorf("cp /escape/passwd = %d %q", code, data["passwd"])
	}
	for _, p := range []string{"/hostdir/secret", "/reldir/secret", "/hostdir/", "/hostsecret/"} {
		out, se, code := runIn(t, d, "", "cp", id+":"+p, "-")
		if code == 0 || strings.Contains(out, "host secret") || !strings.Contains(se, "Could not find the file") {
			t.Errorf("cp %s = %d %q %q", p, code, out, se)
		}
	}
	// A final link is copied as a link; following it stays in the
	// container (which has no /etc/shadow).
	out, _, _ = runIn(t, d, "", "cp", id+":/x", "-")
	hdrs, _ := untar(t, strings.NewReader(out))
	if h := hdrs["x"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/etc/shadow" {
		t.Errorf("cp /x: %+v", hdrs)
	}
	if out, se, code := runIn(t, d, "", "cp", "-L", id+":/hostsecret", "-"); code == 0 || strings.Contains(out, "host secret") {
		t.Errorf("cp -L /hostsecret = %d %q %q", code, out, se)
	}
	c := d.Client(t)
	ctx := context.Background()
	st, err := c.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: "/escape"})
	if err != nil || st.Stat.LinkTarget != "/etc" || st.Stat.Mode&os.ModeSymlink == 0 {
		t.Errorf("stat /escape = %+v, %v", st.Stat, err)
	}

	// Writing through the links lands in the container or fails.
	if err := os.WriteFile(filepath.Join(host, "payload"), []byte("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "cp", filepath.Join(host, "payload"), id+":/escape/")
	if out := dockerOK(t, d, "exec", id, "cat", "/etc/payload"); out != "payload" {
		t.Errorf("cp into /escape/: %q", out)
	}
	for _, p := range []string{"/hostdir/", "/reldir/", "/hostdir/x"} {
		d.Docker(t, "cp", filepath.Join(host, "payload"), id+":"+p)
	}
	// Hand-made archives: climbing names and links are refused.
	evil := []struct {
		name    string
		entries []tar.Header
	}{
		{"dot-dot name", []tar.Header{{Name: "../../../../../../.." + host + "/pwned", Typeflag: tar.TypeReg}}},
		{"relative link out", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../etc"}}},
		{"hard link out", []tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../../../../../../.." + secret}}},
	}
	for _, e := range evil {
		if _, err := c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/tmp", Content: tarOf(t, e.entries...)}); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v", e.name, err)
		}
	}
	// An absolute link, then a file through it: inside the container.
	_, err = c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/tmp", Content: tarOf(t,
		tar.Header{Name: "abs", Typeflag: tar.TypeSymlink, Linkname: host},
		tar.Header{Name: "abs/pwned", Typeflag: tar.TypeReg})})
	if err != nil {
		t.Error(err)
	}
	if out := dockerOK(t, d, "exec", id, "ls", host); out != "pwned" {
		t.Errorf("the container's %s holds %q", host, out)
	}
	ents, _ := os.ReadDir(host)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "payload,secret" {
		t.Errorf("the host directory now holds %v", names)
	}
	if b, _ := os.ReadFile(secret); string(b) != "host secret" {
		t.Errorf("the host secret is now %q", b)
	}

	// noOverwriteDirNonDir (the CLI's default) keeps a directory from
	// being replaced by a file.
	_, err = c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: tarOf(t, tar.Header{Name: "tmp", Typeflag: tar.TypeReg})})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "cannot overwrite directory") {
		t.Errorf("file over /tmp: %v", err)
	}
	if _, err := c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/nope", Content: tarOf(t)}); !errdefs.IsNotFound(err) {
		t.Errorf("extract into a missing directory: %v", err)
	}
	if _, err := c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/etc/passwd", Content: tarOf(t)}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("extract into a file: %v", err)
	}
	dockerOK(t, d, "rm", "-f", id)
}

func tarOf(t *testing.T, hdrs ...tar.Header) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		h.Mode = 0o644
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestCpThroughMounts: cp reads and writes a volume's and a bind mount's
// content, as Docker's does, refuses to write into a read-only one, and
// a link inside a volume leads nowhere outside it.
func TestCpThroughMounts(t *testing.T) {
	d, ref := pulled(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "onhost"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := t.TempDir()
	id := dockerOK(t, d, "run", "-d", "-v", "cpvol:/data", "-v", host+":/bind", "-v", ro+":/ro:ro", ref, "sh", "-c",
		"echo in-volume > /data/f && ln -s / /data/escape && ln -s /data /link && echo ready && sleep 1000")
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })

	for p, want := range map[string]string{"/data/f": "in-volume\n", "/bind/onhost": "from the host\n", "/link/f": "in-volume\n"} {
		out, se, code := runIn(t, d, "", "cp", id+":"+p, "-")
		_, data := untar(t, strings.NewReader(out))
		if code != 0 || data[filepath.Base(p)] != want {
			t.Errorf("cp %s - = %d %q %q", p, code, data, se)
		}
	}
	// A link in the volume resolves inside it: /data/escape/etc is not the
	// container's /etc, nor the host's.
	if out, se, code := runIn(t, d, "", "cp", id+":/data/escape/etc/passwd", "-"); code == 0 || !strings.Contains(se, "Could not find the file") {
		t.Errorf("cp through a link out of the volume = %d %q %q", code, out, se)
	}

	src := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(src, []byte("copied in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "cp", src, id+":/data/")
	dockerOK(t, d, "cp", src, id+":/bind/")
	if got := dockerOK(t, d, "exec", id, "cat", "/data/in", "/bind/in"); got != "copied in\ncopied in" {
		t.Errorf("in the container: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(host, "in")); err != nil || string(b) != "copied in\n" {
		t.Errorf("on the host: %q %v", b, err)
	}
	// The volume keeps it for other containers.
	if got := dockerOK(t, d, "run", "--rm", "-v", "cpvol:/v", ref, "cat", "/v/in"); got != "copied in" {
		t.Errorf("another container of the volume: %q", got)
	}
	if out, err := d.Docker(t, "cp", src, id+":/ro/"); err == nil || !strings.Contains(out, "mounted volume is marked read-only") {
		t.Errorf("cp into a read-only bind: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(ro); len(entries) != 0 {
		t.Errorf("the read-only bind got %v", entries)
	}
	dockerOK(t, d, "rm", "-f", id)
}
