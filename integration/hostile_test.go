//go:build integration

package integration

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Hostile containers: a container, an image or a build context that
// plants symlinks, hard links and racing renames pointing at the host
// must not make the engine read or write anything outside the
// container's root or volume. Each test keeps sentinel files in the test
// user's temporary directory beside the daemon's data, where the engine
// could reach them if it followed a link as the host sees it, and checks
// that they are neither changed, nor joined by new files, nor shown in
// any output.

// sentinel is a directory of the host with files no container may reach.
type sentinel struct {
	dir   string
	text  string            // a random line in every file
	files map[string]string // name -> content
}

func newSentinel(t *testing.T, d *daemon) *sentinel {
	t.Helper()
	b := make([]byte, 12)
	rand.Read(b)
	s := &sentinel{dir: filepath.Join(filepath.Dir(d.Data), "sentinel"), text: "HOST-SENTINEL-" + hex.EncodeToString(b)}
	s.files = map[string]string{
		"secret": s.text + "\n",
		"passwd": "root:x:0:0:" + s.text + ":/root:/bin/sh\nhostuser:x:4242:4242:" + s.text + ":/:/bin/sh\n",
		"group":  "root:x:0:\nhostgroup:x:4242:\n",
		"hosts":  "127.0.0.1 " + s.text + "\n",
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range s.files {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// check fails t if the sentinel directory holds anything new or any
// file changed.
func (s *sentinel) check(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatalf("sentinel directory: %v", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := make([]string, 0, len(s.files))
	for name := range s.files {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the sentinel directory %s holds %v, want %v", s.dir, names, want)
	}
	for name, content := range s.files {
		if b, err := os.ReadFile(filepath.Join(s.dir, name)); err != nil || string(b) != content {
			t.Errorf("sentinel %s: %q, %v; want it unchanged", name, b, err)
		}
	}
}

// leaked fails t if out shows a sentinel's content.
func (s *sentinel) leaked(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, s.text) {
		t.Errorf("%s shows the host's sentinel:\n%.500s", what, out)
	}
}

// swapLoop is a shell loop that makes /NAME a directory, then a symlink
// to TARGET, then the directory again, until /NAME.pid's process is
// killed: rename(2) each time, so every lookup of the engine may meet
// either.
func swapLoop(name, target string) string {
	return "mkdir -p /" + name + " && ln -s " + target + " /" + name + ".lnk && " +
		"{ (while :; do mv /" + name + " /" + name + ".dir; mv /" + name + ".lnk /" + name + "; " +
		"mv /" + name + " /" + name + ".lnk; mv /" + name + ".dir /" + name + "; done) & echo $! > /" + name + ".pid; }"
}

// stopSwaps kills the loops swapLoop started for names in container id;
// the directories are then where the loops left them.
func stopSwaps(t *testing.T, d *daemon, id string, names ...string) {
	t.Helper()
	for _, n := range names {
		must(t, d, "exec", id, "sh", "-c", "kill $(cat /"+n+".pid)")
	}
}

// hostileRounds is how many times a racing operation runs while a
// container swaps its links.
const hostileRounds = 25

// TestHostileCpRace: while the container swaps a directory with a
// symlink to "/" (and one to the sentinel's own path), docker cp in both
// directions reads and writes the container's files or fails; the
// sentinel is never read or written.
func TestHostileCpRace(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	// The container holds its own directory at the sentinel's path, with
	// a decoy: through the links the engine finds that, or nothing.
	script := "mkdir -p /d" + s.dir + " /h && echo container > /d" + s.dir + "/decoy && " +
		swapLoop("d", "/") + " && " + swapLoop("h", s.dir) + " && echo ready; sleep 1000"
	id := must(t, d, "run", "-d", ref, "sh", "-c", script)
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	host := t.TempDir()
	in := filepath.Join(host, "in")
	if err := os.WriteFile(in, []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range hostileRounds {
		for _, p := range []string{"/d" + s.dir + "/secret", "/d" + s.dir + "/", "/d" + s.dir, "/h/secret", "/h/", "/h"} {
			out, se, _ := runIn(t, d, "", "cp", id+":"+p, "-")
			s.leaked(t, "docker cp "+p, out+se)
		}
		for _, p := range []string{"/d" + s.dir + "/", "/d" + s.dir + "/new", "/h/", "/h/new", "/d/h/"} {
			_, se, _ := runIn(t, d, "", "cp", in, id+":"+p)
			s.leaked(t, "docker cp into "+p, se)
		}
		if i%5 == 0 {
			s.check(t)
		}
	}
	// The container's decoy is still its own. (Where it is depends on
	// the races: an extraction makes the directories of its path again
	// when the container moved them away meanwhile, inside the
	// container, as Docker's does.)
	stopSwaps(t, d, id, "d", "h")
	s.check(t)
	if out, _ := d.Docker(t, "exec", id, "sh", "-c", "find / -xdev -name decoy | head -1 | xargs cat"); !strings.Contains(out, "container") {
		t.Errorf("the container's decoy: %q", out)
	}
	must(t, d, "rm", "-f", id)
	s.check(t)
}

// TestHostileCopyUp: an image whose volume paths hold symlinks and hard
// links out of the container, and a volume path that is itself a symlink
// to the host's sentinel: the volume is filled with the links as links
// and the image's own files, never with the host's.
func TestHostileCopyUp(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	prep := must(t, d, "run", "-d", ref, "sh", "-c", strings.Join([]string{
		"mkdir -p /data/sub",
		"echo image > /data/sub/own",
		"ln -s " + s.dir + " /data/abs",
		"ln -s " + s.dir + "/secret /data/abssecret",
		"ln -s ../../../../../../../../.." + s.dir + " /data/up",
		"ln -s / /data/root",
		"ln /etc/passwd /data/hard",
		"ln -s " + s.dir + " /vlink",
		"echo ready; sleep 1000",
	}, " && "))
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", prep); return strings.Contains(out, "ready") })
	must(t, d, "commit", "-c", "VOLUME /data", "-c", "VOLUME /vlink", prep, "hostile-copyup:1")
	must(t, d, "rm", "-f", prep)

	out, err := d.Docker(t, "run", "--rm", "-v", "hcu:/data", "-v", "hcl:/vlink", "hostile-copyup:1", "sh", "-c",
		"ls -A /data /vlink; for l in /data/abs /data/up /data/root; do readlink $l; done; cat /data/sub/own; cat /data/abs/secret /data/up/secret /vlink/secret 2>&1; stat -c %h /data/hard")
	s.leaked(t, "the container on the volumes", out)
	if err != nil {
		t.Fatalf("docker run: %v\n%s\n--- daemon ---\n%s", err, out, d.Log())
	}
	for _, want := range []string{"abs\nabssecret\nhard\nroot\nsub\nup", s.dir + "\n../../../../../../../../.." + s.dir + "\n/\n", "image\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the volume's copy lacks %q:\n%s", want, out)
		}
	}
	// Neither volume holds anything of the host.
	for _, v := range []string{"hcu", "hcl"} {
		mp := must(t, d, "volume", "inspect", "-f", "{{.Mountpoint}}", v)
		filepath.WalkDir(mp, func(p string, de os.DirEntry, err error) error {
			if err == nil && de.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				s.leaked(t, "volume file "+p, string(b))
			}
			return nil
		})
	}
	if ents, _ := os.ReadDir(must(t, d, "volume", "inspect", "-f", "{{.Mountpoint}}", "hcl")); len(ents) != 0 {
		t.Errorf("the volume over /vlink, a link to the host, was filled: %v", ents)
	}
	s.check(t)
}

// TestHostileCommitExport: a container's links to the host, a hard link
// and a directory it swaps with a link to "/" while the engine reads it:
// docker export and docker commit archive the links as links and the
// container's files only.
func TestHostileCommitExport(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	script := strings.Join([]string{
		"ln -s " + s.dir + " /abs",
		"ln -s " + s.dir + "/secret /abssecret",
		"ln -s ../../../../../../../.." + s.dir + " /up",
		"ln /etc/group /hard",
		"mkdir -p /x" + s.dir,
	}, " && ") + " && " + swapLoop("x", "/") + " && echo ready; sleep 1000"
	id := must(t, d, "run", "-d", ref, "sh", "-c", script)
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	c := d.Client(t)
	ctx := context.Background()
	for i := range hostileRounds / 5 {
		rc, err := c.ContainerExport(ctx, id, client.ContainerExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		names := map[string]*tar.Header{}
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("export %d: %v", i, err)
			}
			b, _ := io.ReadAll(tr)
			s.leaked(t, "export entry "+h.Name, string(b))
			names[h.Name] = h
		}
		rc.Close()
		for name, target := range map[string]string{"abs": s.dir, "abssecret": s.dir + "/secret", "up": "../../../../../../../.." + s.dir} {
			if h := names[name]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != target {
				t.Errorf("export %d: %s is %+v, want a symlink to %s", i, name, h, target)
			}
		}
		if h := names["hard"]; h == nil || h.Typeflag != tar.TypeLink && h.Size != names["etc/group"].Size {
			t.Errorf("export %d: hard is %+v, want /etc/group's link or copy", i, h)
		}
	}
	// Committed once the renames stop: without a freezer to pause it, a
	// container renaming its files meanwhile fails the commit's walk.
	stopSwaps(t, d, id, "x")
	must(t, d, "commit", id, "hostile-commit:1")
	out := must(t, d, "run", "--rm", "hostile-commit:1", "sh", "-c", "for l in /abs /abssecret /up; do readlink $l; done; cat /abs/secret /up/secret 2>&1; cat /hard | head -1")
	s.leaked(t, "the committed image", out)
	if !strings.HasPrefix(out, s.dir+"\n"+s.dir+"/secret\n../../../../../../../.."+s.dir+"\n") || !strings.HasSuffix(out, "root:x:0:") {
		t.Errorf("the committed image's links: %q", out)
	}
	saved, se, code := runIn(t, d, "", "save", "hostile-commit:1")
	if code != 0 {
		t.Fatalf("docker save: %s", se)
	}
	s.leaked(t, "docker save of the committed image", saved)
	must(t, d, "rm", "-f", id)
	s.check(t)
}

// TestHostileBuildContext: a build context with symlinks out of it (to
// the sentinel, absolute and relative): COPY through them is refused as
// Docker refuses it, COPY of the context copies them as links, and no
// step reads the host's files.
func TestHostileBuildContext(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	dir := buildDir(t, map[string]string{
		"Dockerfile": "FROM " + ref + "\nCOPY . /ctx/\nRUN readlink /ctx/abs /ctx/rel; cat /ctx/abs/secret /ctx/rel/secret 2>&1; true\n",
		"own":        "context\n",
	})
	links := func(dir string) {
		rel, err := filepath.Rel(dir, s.dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, target := range map[string]string{"abs": s.dir, "rel": rel, "df": s.dir + "/secret"} {
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	links(dir)
	out := must(t, d, "build", "--no-cache", "-t", "hostile-ctx:1", dir)
	s.leaked(t, "docker build", out)
	got := must(t, d, "run", "--rm", "hostile-ctx:1", "sh", "-c", "ls -A /ctx; cat /ctx/abs/secret /ctx/df 2>&1; true")
	s.leaked(t, "the built image", got)
	if !strings.Contains(got, "Dockerfile\nabs\ndf\nown\nrel") {
		t.Errorf("the context's copy: %q", got)
	}
	for _, src := range []string{"abs/secret", "rel/secret", "df", "abs/"} {
		ctxDir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nCOPY " + src + " /got\n"})
		links(ctxDir)
		out, err := d.Docker(t, "build", "--no-cache", "-t", "hostile-copy:1", ctxDir)
		s.leaked(t, "docker build COPY "+src, out)
		if err == nil {
			got := must(t, d, "run", "--rm", "hostile-copy:1", "sh", "-c", "cat /got 2>&1; ls -A /got 2>&1")
			s.leaked(t, "the image built with COPY "+src, got)
			t.Errorf("COPY %s through a link out of the context succeeded: %s", src, got)
		} else if !strings.Contains(out, "forbidden path outside the build context") && !strings.Contains(out, "file not found in build context") {
			t.Errorf("COPY %s: %v\n%s", src, err, out)
		}
	}
	s.check(t)
}

// TestHostileVolumeSubpath: a volume's subpath that is a symlink out of
// the volume is refused at start with Docker's error and status, and a
// subpath swapped between a directory and such a link while containers
// start mounts the directory or nothing.
func TestHostileVolumeSubpath(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	must(t, d, "run", "--rm", "-v", "hsv:/v", ref, "sh", "-c",
		"mkdir /v/real && echo marker > /v/real/marker && ln -s / /v/slash && ln -s "+s.dir+" /v/host && ln -s ../../../../../../.. /v/up")
	c := d.Client(t)
	ctx := context.Background()
	for _, sub := range []string{"slash", "host", "up"} {
		id := must(t, d, "create", "--mount", "type=volume,src=hsv,dst=/m,volume-subpath="+sub, ref, "ls", "-A", "/m")
		_, err := c.ContainerStart(ctx, id, client.ContainerStartOptions{})
		if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "path concatenation escapes the base directory") || !strings.Contains(err.Error(), "subpath: "+sub) {
			t.Errorf("start with subpath %s: %v, want 400 and Docker's escape error", sub, err)
		}
		if st := must(t, d, "inspect", "-f", "{{.State.Status}}", id); st != "created" {
			t.Errorf("subpath %s: the container is %s", sub, st)
		}
		must(t, d, "rm", id)
	}
	// The subpath raced: a container renames it between the directory
	// and a symlink to "/" while others start with it.
	racer := must(t, d, "run", "-d", "-v", "hsv:/v", ref, "sh", "-c",
		"cd /v && ln -s / lnk && (while :; do mv real real.dir; mv lnk real; mv real lnk; mv real.dir real; done) & echo ready; sleep 1000")
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", racer); return strings.Contains(out, "ready") })
	mounted := 0
	for range hostileRounds {
		out, err := d.Docker(t, "run", "--rm", "--mount", "type=volume,src=hsv,dst=/m,volume-subpath=real", ref, "ls", "-A", "/m")
		s.leaked(t, "a start racing the subpath", out)
		switch {
		case err == nil && strings.TrimSpace(out) == "marker":
			mounted++
		case err != nil && (strings.Contains(out, "path concatenation escapes the base directory") || strings.Contains(out, "cannot access path")):
		default:
			t.Errorf("a start racing the subpath: %v\n%s", err, out)
		}
	}
	t.Logf("%d of %d starts found the directory", mounted, hostileRounds)
	must(t, d, "rm", "-f", racer)
	s.check(t)
}

// hostileImage makes the image name from ref's files with the symlinks
// links (path in the image -> target) in place of what ref has there:
// docker export, the archive rewritten, docker import. (A container
// cannot make them itself: the engine's /etc/hosts is mounted over its
// own.)
func hostileImage(t *testing.T, d *daemon, ref, name string, links map[string]string) {
	t.Helper()
	id := must(t, d, "create", ref, "true")
	out, se, code := runIn(t, d, "", "export", id)
	if code != 0 {
		t.Fatalf("docker export: %s", se)
	}
	must(t, d, "rm", id)
	var buf strings.Builder
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(strings.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := links[strings.TrimSuffix(h.Name, "/")]; ok {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(f, []byte(buf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, d, "import", f, name)
}

// TestHostileEtcAndWorkdir: an image whose /etc/passwd, /etc/group and
// /etc/hosts are symlinks to the host's files, and whose working
// directories are symlinks to host directories: users are looked up in
// the container (and not found), the engine's /etc/hosts is never
// written through the link, and working directories are made inside the
// container.
func TestHostileEtcAndWorkdir(t *testing.T) {
	d, ref := pulled(t)
	s := newSentinel(t, d)
	hostileImage(t, d, ref, "hostile-etc:1", map[string]string{
		"etc/passwd": s.dir + "/passwd",
		"etc/group":  s.dir + "/group",
		"etc/hosts":  s.dir + "/hosts",
		"wd":         s.dir + "/work",
		"hostdir":    s.dir,
	})
	for _, user := range []string{"hostuser", "hostuser:hostgroup", "0:hostgroup"} {
		out, err := d.Docker(t, "run", "--rm", "-u", user, "hostile-etc:1", "id")
		s.leaked(t, "run -u "+user, out)
		if err == nil || !strings.Contains(out, "unable to find") {
			t.Errorf("run -u %s with /etc/passwd a link to the host: %v\n%s", user, err, out)
		}
	}
	out, err := d.Docker(t, "run", "--rm", "hostile-etc:1", "sh", "-c", "cat /etc/hosts; id")
	s.leaked(t, "the container's /etc/hosts", out)
	if err != nil || !strings.Contains(out, "localhost") {
		t.Errorf("a container whose /etc/hosts is a link to the host: %v\n%s", err, out)
	}
	// Working directories through the links are made in the container.
	for _, wd := range []string{"/wd", "/wd/sub", "/hostdir/new"} {
		out, err := d.Docker(t, "run", "--rm", "-w", wd, "hostile-etc:1", "sh", "-c", "pwd; ls -A; cat secret 2>&1; true")
		s.leaked(t, "run -w "+wd, out)
		if err != nil {
			t.Errorf("run -w %s: %v\n%s", wd, err, out)
		}
	}
	id := must(t, d, "create", "-w", "/hostdir/made", "hostile-etc:1", "true")
	if out, _, _ := runIn(t, d, "", "cp", id+":"+s.dir+"/made", "-"); !strings.Contains(out, "made/") {
		t.Errorf("the working directory is not made in the container: %q", out)
	}
	must(t, d, "rm", id)
	s.check(t)
}
