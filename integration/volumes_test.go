//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Named volumes: docker volume create, inspect, ls and rm, data kept from
// one container to the next, read-only mounts, a volume in use refused,
// one made by docker run, and the image's content copied into an empty
// volume.
func TestNamedVolumes(t *testing.T) {
	d, ref := pulled(t)
	if out := dockerOK(t, d, "volume", "create", "--label", "team=a", "named"); out != "named" {
		t.Errorf("volume create printed %q", out)
	}
	mp := filepath.Join(d.Data, "hutch", "volumes", "named", "_data")
	if out := dockerOK(t, d, "volume", "inspect", "-f", "{{.Driver}} {{.Scope}} {{.Labels}} {{.Mountpoint}}", "named"); out != "local local map[team:a] "+mp {
		t.Errorf("volume inspect = %q, want local, team=a and %s", out, mp)
	}
	if fi, err := os.Stat(filepath.Dir(filepath.Dir(mp))); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the volumes directory: %v, %v; want mode 0700", fi, err)
	}

	dockerOK(t, d, "run", "--rm", "-v", "named:/data", ref, "sh", "-c", "echo kept > /data/f")
	if out := dockerOK(t, d, "run", "--rm", "-v", "named:/data:ro", ref, "cat", "/data/f"); out != "kept" {
		t.Errorf("the next container read %q from the volume", out)
	}
	if out, err := d.Docker(t, "run", "--rm", "-v", "named:/data:ro", ref, "touch", "/data/g"); err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("writing to a read-only volume: %v, %q", err, out)
	}

	// A container holds the volume, running or not.
	dockerOK(t, d, "create", "--name", "holder", "--mount", "type=volume,source=named,target=/data", ref, "true")
	var mounts []struct{ Type, Name, Source, Destination, Driver string }
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "-f", "{{json .Mounts}}", "holder")), &mounts); err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 1 || mounts[0].Type != "volume" || mounts[0].Name != "named" || mounts[0].Source != mp || mounts[0].Destination != "/data" || mounts[0].Driver != "local" {
		t.Errorf("inspect Mounts = %+v", mounts)
	}
	if out, err := d.Docker(t, "volume", "rm", "named"); err == nil || !strings.Contains(out, "volume is in use") {
		t.Errorf("volume rm of a volume in use: %v, %q", err, out)
	}
	if out := dockerOK(t, d, "volume", "ls", "-q", "--filter", "dangling=true"); strings.Contains(out, "named") {
		t.Errorf("volume ls dangling=true lists the volume in use: %q", out)
	}
	// A create that fails (the name is taken) makes no volume.
	if out, err := d.Docker(t, "create", "--name", "holder", "-v", "never:/data", ref, "true"); err == nil || !strings.Contains(out, "Conflict") {
		t.Errorf("create with a name in use: %v, %q", err, out)
	}
	if out, err := d.Docker(t, "volume", "inspect", "never"); err == nil || !strings.Contains(out, "no such volume") {
		t.Errorf("the volume of the failed create: %v, %q", err, out)
	}
	// Nor does one whose second volume goes where the first went.
	if out, err := d.Docker(t, "create", "-v", "dup1:/x", "-v", "dup2:/x/", ref, "true"); err == nil || !strings.Contains(out, "Duplicate mount point: /x") {
		t.Errorf("create with two volumes at /x: %v, %q", err, out)
	}
	if out := dockerOK(t, d, "volume", "ls", "-q", "--filter", "name=dup"); out != "" {
		t.Errorf("volumes of the failed create: %q", out)
	}
	// rm -v leaves named volumes alone.
	dockerOK(t, d, "rm", "-v", "holder")
	if out := dockerOK(t, d, "volume", "ls", "-q", "--filter", "dangling=true", "--filter", "label=team=a"); out != "named" {
		t.Errorf("volume ls dangling=true label=team=a = %q", out)
	}
	dockerOK(t, d, "volume", "rm", "named")
	if out, err := d.Docker(t, "volume", "inspect", "named"); err == nil || !strings.Contains(out, "get named: no such volume") {
		t.Errorf("inspect after rm: %v, %q", err, out)
	}
	if _, err := os.Stat(filepath.Dir(mp)); !os.IsNotExist(err) {
		t.Errorf("the removed volume's directory: %v", err)
	}

	// docker run makes a volume it names, and fills it from the image.
	if out := dockerOK(t, d, "run", "--rm", "-v", "etc:/etc", ref, "cat", "/etc/hostname"); len(out) != 12 {
		t.Errorf("/etc/hostname over a volume at /etc: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "-v", "etc:/v", ref, "head", "-1", "/v/passwd"); !strings.HasPrefix(out, "root:") {
		t.Errorf("the image's /etc/passwd in the volume: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "-v", "empty:/etc:nocopy", ref, "ls", "/etc"); strings.Contains(out, "passwd") {
		t.Errorf("nocopy volume has %q", out)
	}

	for _, tc := range []struct{ args []string }{
		{[]string{"volume", "create", "bad/name"}},
		{[]string{"volume", "create", "-d", "nfs", "x1"}},
		{[]string{"volume", "create", "-o", "type=tmpfs", "x2"}},
		{[]string{"run", "--rm", "--mount", "type=volume,source=x3,target=/d,volume-subpath=../sub", ref, "true"}},
	} {
		if out, err := d.Docker(t, tc.args...); err == nil || !strings.Contains(out, "Error response from daemon") {
			t.Errorf("docker %s: %v, %q", strings.Join(tc.args, " "), err, out)
		}
	}
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "empty\netc" {
		t.Errorf("volumes left: %q, want empty and etc", out)
	}
}

// Anonymous volumes: -v /path and the image's VOLUME get one each, with
// the image's content, gone with the container on rm -v and --rm;
// volume prune takes the unused anonymous ones, and named ones with -a.
func TestAnonymousVolumes(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--name", "seeder", ref, "sh", "-c", "mkdir /seed && echo from-image > /seed/f")
	dockerOK(t, d, "commit", "--change", "VOLUME /seed", "seeder", "withvol:1")
	dockerOK(t, d, "rm", "seeder")

	dockerOK(t, d, "create", "--name", "anon", "-v", "/scratch", "withvol:1", "cat", "/seed/f")
	var mounts []struct{ Type, Name, Destination string }
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "-f", "{{json .Mounts}}", "anon")), &mounts); err != nil {
		t.Fatal(err)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	if len(mounts) != 2 || !hex64.MatchString(mounts[0].Name) || !hex64.MatchString(mounts[1].Name) ||
		mounts[0].Type != "volume" || mounts[1].Type != "volume" {
		t.Fatalf("inspect Mounts = %+v, want two anonymous volumes", mounts)
	}
	if out := dockerOK(t, d, "start", "-a", "anon"); out != "from-image" {
		t.Errorf("the image's VOLUME content: %q", out)
	}
	if out := dockerOK(t, d, "volume", "ls", "-q", "--filter", "label=com.docker.volume.anonymous"); len(strings.Fields(out)) != 2 {
		t.Errorf("anonymous volumes listed: %q", out)
	}
	dockerOK(t, d, "rm", "-v", "anon")
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "" {
		t.Errorf("volumes left after rm -v: %q", out)
	}

	dockerOK(t, d, "run", "--rm", "-v", "/scratch", "withvol:1", "true")
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "" {
		t.Errorf("volumes left after run --rm: %q", out)
	}

	// Without -v or --rm they stay, until a prune.
	dockerOK(t, d, "run", "--name", "kept", "withvol:1", "true")
	dockerOK(t, d, "volume", "create", "unused")
	dockerOK(t, d, "rm", "kept")
	if out := dockerOK(t, d, "volume", "ls", "-q"); len(strings.Fields(out)) != 2 {
		t.Fatalf("volumes after rm without -v: %q", out)
	}
	if out := dockerOK(t, d, "volume", "prune", "-f"); !strings.Contains(out, "Total reclaimed space: 11B") {
		t.Errorf("volume prune: %q", out)
	}
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "unused" {
		t.Errorf("volumes after prune: %q, want the named one", out)
	}
	dockerOK(t, d, "volume", "prune", "-a", "-f")
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "" {
		t.Errorf("volumes after prune -a: %q", out)
	}
}

// docker system df counts images, containers and volumes, and docker
// system prune (which also asks to prune the build cache) clears what is
// unused.
func TestSystemDFAndPrune(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--name", "wrote", "-v", "dfvol:/data", ref, "sh", "-c", "head -c 2048 /dev/zero > /data/f; head -c 4096 /dev/zero > /f")
	dockerOK(t, d, "volume", "create", "spare")
	out := dockerOK(t, d, "system", "df", "--format", "{{.Type}} {{.TotalCount}} {{.Active}} {{.Size}} {{.Reclaimable}}")
	lines := strings.Split(out, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "Images 1 1 ") ||
		lines[1] != "Containers 1 0 4.096kB 4.096kB (100%)" ||
		lines[2] != "Local Volumes 2 1 2.048kB 0B (0%)" ||
		lines[3] != "Build Cache 0 0 0B 0B" {
		t.Errorf("docker system df:\n%s", out)
	}
	if out := dockerOK(t, d, "system", "df", "-v", "--format", "{{json .Volumes}}"); !strings.Contains(out, `"Name":"dfvol"`) || !strings.Contains(out, `"Links":"1"`) {
		t.Errorf("docker system df -v volumes: %s", out)
	}
	out = dockerOK(t, d, "system", "prune", "-f", "--volumes")
	if !strings.Contains(out, "Deleted Containers:") || !strings.Contains(out, "Total reclaimed space:") {
		t.Errorf("docker system prune: %q", out)
	}
	if out := dockerOK(t, d, "ps", "-aq"); out != "" {
		t.Errorf("containers after system prune: %q", out)
	}
	// Named volumes stay with --volumes since API 1.42: only anonymous
	// ones go (docker volume prune -a takes the rest).
	if out := dockerOK(t, d, "volume", "ls", "-q"); out != "dfvol\nspare" {
		t.Errorf("volumes after system prune: %q", out)
	}
}

// TestBindVolume: the local driver's bind options (compose's driver_opts
// type: none, o: bind, device: …) make a named volume of a host
// directory; other types are refused.
func TestBindVolume(t *testing.T) {
	d, ref := pulled(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "volume", "create", "-o", "type=none", "-o", "o=bind", "-o", "device="+host, "bv")
	if got := dockerOK(t, d, "volume", "inspect", "--format", "{{.Options.type}} {{.Options.o}} {{.Options.device}}", "bv"); got != "none bind "+host {
		t.Errorf("volume inspect options = %q", got)
	}
	if got := dockerOK(t, d, "run", "--rm", "-v", "bv:/data", ref, "sh", "-c", "cat /data/f; echo from the container > /data/g"); got != "from the host" {
		t.Errorf("the container reads %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(host, "g")); err != nil || string(b) != "from the container\n" {
		t.Errorf("the host dir got %q, %v", b, err)
	}
	// --mount with volume options makes one too.
	if got := dockerOK(t, d, "run", "--rm", "--mount", "type=volume,source=bv2,target=/data,volume-opt=type=none,volume-opt=o=bind,volume-opt=device="+host, ref, "cat", "/data/g"); got != "from the container" {
		t.Errorf("--mount with volume-opt reads %q", got)
	}
	// Removing the volumes leaves the directory alone.
	dockerOK(t, d, "volume", "rm", "bv", "bv2")
	if entries, _ := os.ReadDir(host); len(entries) != 2 {
		t.Errorf("the host dir after volume rm: %v", entries)
	}
	// A missing device fails the container, not the volume's creation.
	dockerOK(t, d, "volume", "create", "-o", "type=none", "-o", "o=bind", "-o", "device="+filepath.Join(host, "nope"), "missing")
	if out, err := d.Docker(t, "run", "--rm", "-v", "missing:/data", ref, "true"); err == nil || !strings.Contains(out, "no such file or directory") {
		t.Errorf("run with a missing device: %v\n%s", err, out)
	}
	for opts, want := range map[string]string{
		"type=tmpfs":             `missing required option: "device"`,
		"type=nfs,device=:/x":    "only binds of a directory",
		"foo=bar":                `invalid option: "foo"`,
		"o=bind,device=relative": "must be an absolute path",
	} {
		args := []string{"volume", "create"}
		for _, o := range strings.Split(opts, ",") {
			args = append(args, "-o", o)
		}
		if out, err := d.Docker(t, append(args, "x")...); err == nil || !strings.Contains(out, want) {
			t.Errorf("volume create %s: %v, %q", opts, err, out)
		}
	}
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
}

// A local volume of type tmpfs (compose's driver_opts type: tmpfs) is a
// tmpfs with its options while containers use it, shared by those that
// run at once, and empty again once the last of them stops, as with
// Docker's local driver.
func TestTmpfsVolume(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "volume", "create", "-o", "type=tmpfs", "-o", "device=tmpfs", "-o", "o=size=2m,mode=0750,nodev", "tv")
	if got := dockerOK(t, d, "volume", "inspect", "--format", "{{.Driver}} {{.Options.type}} {{.Options.device}} {{.Options.o}}", "tv"); got != "local tmpfs tmpfs size=2m,mode=0750,nodev" {
		t.Errorf("volume inspect = %q", got)
	}
	dockerOK(t, d, "run", "-d", "--name", "writer", "-v", "tv:/data", ref, "sh", "-c", "echo one > /data/f; sleep 300")
	waitFor(t, func() bool {
		out, err := d.Docker(t, "exec", "writer", "cat", "/data/f")
		return err == nil && strings.TrimSpace(out) == "one"
	})
	// A second container shares the mount while the first runs.
	out := dockerOK(t, d, "run", "--rm", "-v", "tv:/data", ref, "sh", "-c",
		`cat /data/f; grep " /data " /proc/mounts; stat -c %a /data; dd if=/dev/zero of=/data/big bs=1024 count=4096 2>&1; ls /data`)
	for _, want := range []string{"one\n", "tmpfs /data tmpfs ", "size=2048k", "nodev", "\n750\n", "No space left on device"} {
		if !strings.Contains(out, want) {
			t.Errorf("the second container's view lacks %q:\n%s", want, out)
		}
	}
	// The last user gone, the files went with the tmpfs.
	dockerOK(t, d, "rm", "-f", "writer")
	if got := dockerOK(t, d, "run", "--rm", "-v", "tv:/data", ref, "sh", "-c", "ls -A /data; grep -c ' /data tmpfs ' /proc/mounts"); got != "1" {
		t.Errorf("after the last container: %q, want an empty tmpfs", got)
	}
	// --mount with volume options makes one too; docker restart remounts.
	dockerOK(t, d, "run", "-d", "--name", "mt", "--mount", "type=volume,source=tv2,target=/d,volume-opt=type=tmpfs,volume-opt=device=tmpfs,volume-opt=o=size=1m", ref, "sh", "-c", "ls /d; touch /d/x; grep ' /d ' /proc/mounts; sleep 300")
	var logs string
	// The first run has written its file and shown its mount before the
	// restart kills it (on a busy machine it may not have yet).
	waitFor(t, func() bool {
		logs, _ = d.Docker(t, "logs", "mt")
		return strings.Count(logs, "size=1024k") == 1
	})
	dockerOK(t, d, "restart", "-t", "0", "mt")
	waitFor(t, func() bool {
		logs, _ = d.Docker(t, "logs", "mt")
		return strings.Count(logs, "size=1024k") == 2
	})
	if strings.Contains(logs, "x\n") {
		t.Errorf("the restarted container found the first run's file:\n%s", logs)
	}
	dockerOK(t, d, "rm", "-f", "mt")
	// A word tmpfs does not take is refused at create, and makes nothing.
	if out, err := d.Docker(t, "volume", "create", "-o", "type=tmpfs", "-o", "device=tmpfs", "-o", "o=sise=1m", "typo"); err == nil || !strings.Contains(out, `invalid tmpfs volume option "sise=1m"`) {
		t.Errorf("volume create with o=sise=1m: %v, %q", err, out)
	}
	// A value the kernel refuses fails the start, and leaves no mount.
	dockerOK(t, d, "volume", "create", "-o", "type=tmpfs", "-o", "device=tmpfs", "-o", "o=size=lots", "bad")
	if out, err := d.Docker(t, "run", "--rm", "-v", "bad:/data", ref, "true"); err == nil || !strings.Contains(out, "error while mounting volume") {
		t.Errorf("run with o=size=lots: %v, %q", err, out)
	}
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
	dockerOK(t, d, "volume", "rm", "tv", "tv2", "bad")
	if vols := dockerOK(t, d, "volume", "ls", "-q"); vols != "" {
		t.Errorf("volumes left: %q", vols)
	}
}

// --volumes-from copies another container's volumes and binds (not its
// tmpfs mounts), read-only with :ro; the container's own mounts win where
// they meet; an unknown container or mode is refused and makes nothing.
func TestVolumesFrom(t *testing.T) {
	d, ref := pulled(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "h"), []byte("bound\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "run", "--name", "data", "-v", "named:/named", "-v", "/anon", "-v", host+":/bind:ro", "--tmpfs", "/scratch",
		ref, "sh", "-c", "echo n > /named/f; echo a > /anon/g")
	anon := dockerOK(t, d, "inspect", "--format", `{{range .Mounts}}{{if eq .Destination "/anon"}}{{.Name}}{{end}}{{end}}`, "data")
	if anon == "" {
		t.Fatal("no anonymous volume at /anon")
	}
	// From a stopped container: its volumes with their data, its bind.
	out := dockerOK(t, d, "run", "--name", "reader", "--volumes-from", "data", ref, "sh", "-c",
		"cat /named/f /anon/g /bind/h; echo more >> /anon/g && echo rw; touch /bind/x 2>/dev/null || echo bind ro; test -e /scratch || echo no scratch")
	if out != "n\na\nbound\nrw\nbind ro\nno scratch" {
		t.Errorf("--volumes-from data saw %q", out)
	}
	var mounts []struct {
		Type, Name, Source, Destination string
		RW                              bool
	}
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "--format", "{{json .Mounts}}", "reader")), &mounts); err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 {
		t.Errorf("reader's mounts: %+v", mounts)
	}
	// :ro makes the volumes read-only; a mount of the container's own
	// replaces the copied one at its destination.
	out = dockerOK(t, d, "run", "--rm", "--volumes-from", "data:ro", "-v", "other:/named", ref, "sh", "-c",
		"cat /anon/g; (echo x > /anon/y) 2>/dev/null || echo anon ro; ls -A /named; echo o > /named/o && echo own rw")
	if out != "a\nmore\nanon ro\nown rw" {
		t.Errorf("--volumes-from data:ro with -v other:/named saw %q", out)
	}
	// The volumes are in use by reader too: removing data with -v keeps
	// the anonymous volume, which reader still has.
	dockerOK(t, d, "rm", "-v", "data")
	if got := dockerOK(t, d, "run", "--rm", "--volumes-from", "reader", ref, "cat", "/anon/g"); got != "a\nmore" {
		t.Errorf("after data's removal, reader's copy reads %q", got)
	}
	if _, err := d.Docker(t, "volume", "rm", anon); err == nil {
		t.Error("the anonymous volume reader uses was removed")
	}
	before := dockerOK(t, d, "ps", "-aq")
	vols := dockerOK(t, d, "volume", "ls", "-q")
	for args, want := range map[string]string{
		"nope":       "No such container: nope",
		"reader:rx":  "invalid mode: rx",
		"reader:ro:": "invalid mode: ro:",
	} {
		if out, err := d.Docker(t, "run", "--rm", "--volumes-from", args, ref, "true"); err == nil || !strings.Contains(out, want) {
			t.Errorf("--volumes-from %s: %v, %q", args, err, out)
		}
	}
	if got := dockerOK(t, d, "ps", "-aq"); got != before {
		t.Errorf("containers after refused runs: %q, want %q", got, before)
	}
	if got := dockerOK(t, d, "volume", "ls", "-q"); got != vols {
		t.Errorf("volumes after refused runs: %q, want %q", got, vols)
	}
	dockerOK(t, d, "rm", "-v", "reader")
	if got := dockerOK(t, d, "volume", "ls", "-q"); got != "named\nother" && got != "other\nnamed" {
		t.Errorf("volumes at the end: %q, want named and other", got)
	}
}

// A volume mount with a subpath (--mount volume-subpath=) binds that
// directory or file of the volume, resolved inside it: a symlink cannot
// lead out of the volume; a subpath that is not there fails the start;
// one that is not relative, or on an anonymous volume, fails the create.
func TestVolumeSubpath(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--rm", "-v", "sv:/v", ref, "sh", "-c",
		"mkdir -p /v/a/b && echo deep > /v/a/b/f && echo top > /v/t && ln -s /etc /v/esc && ln -s ../../.. /v/a/up")
	sub := func(sub, dst string, extra ...string) string {
		return "type=volume,src=sv,dst=" + dst + ",volume-subpath=" + sub + strings.Join(extra, "")
	}
	if out := dockerOK(t, d, "run", "--rm", "--mount", sub("a/b", "/d"), ref, "sh", "-c", "ls /d; cat /d/f"); out != "f\ndeep" {
		t.Errorf("subpath a/b: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "--mount", sub("t", "/t.txt"), ref, "cat", "/t.txt"); out != "top" {
		t.Errorf("file subpath t: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "--mount", sub("a", "/d", ",readonly"), ref, "sh", "-c", "(touch /d/x) 2>&1; ls /d"); !strings.Contains(out, "Read-only file system") || !strings.HasSuffix(out, "b\nup") {
		t.Errorf("read-only subpath a: %q", out)
	}
	// A symlink that leads out of the volume is refused, as in Docker.
	for _, s := range []string{"a/up", "esc", "a/up/a"} {
		if out, err := d.Docker(t, "run", "--rm", "--mount", sub(s, "/d"), ref, "ls", "/d"); err == nil || !strings.Contains(out, "path concatenation escapes the base directory") {
			t.Errorf("subpath %s: %v, %q", s, err, out)
		}
	}
	if out, err := d.Docker(t, "run", "--rm", "--mount", sub("nope", "/d"), ref, "true"); err == nil || !strings.Contains(out, "cannot access path") || !strings.Contains(out, "no such file or directory") {
		t.Errorf("missing subpath: %v, %q", err, out)
	}
	for mnt, want := range map[string]string{
		sub("../x", "/d"):                     "subpath must be a relative path within the volume",
		sub("/a", "/d"):                       "subpath must be a relative path within the volume",
		"type=volume,dst=/d,volume-subpath=a": "must not set Subpath when using anonymous volumes",
	} {
		if out, err := d.Docker(t, "create", "--mount", mnt, ref, "true"); err == nil || !strings.Contains(out, want) {
			t.Errorf("create --mount %s: %v, %q", mnt, err, out)
		}
	}
	// The staging binds go once the container is made.
	dockerOK(t, d, "run", "-d", "--name", "subr", "--mount", sub("a/b", "/d"), ref, "sleep", "300")
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", enginePID(t, d))); err != nil || strings.Contains(string(b), "staged-") {
		t.Errorf("staging binds left in the engine: %v\n%s", err, b)
	}
	if out := dockerOK(t, d, "exec", "subr", "cat", "/d/f"); out != "deep" {
		t.Errorf("the running container's subpath: %q", out)
	}
	// docker cp goes through the subpath too.
	hostFile := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(hostFile, []byte("copied\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dockerOK(t, d, "cp", hostFile, "subr:/d/new")
	if out := dockerOK(t, d, "exec", "subr", "cat", "/d/new"); out != "copied" {
		t.Errorf("docker cp into the subpath, read in the container: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "-v", "sv:/v", ref, "ls", "/v", "/v/a/b"); out != "/v:\na\nesc\nt\n\n/v/a/b:\nf\nnew" {
		t.Errorf("the volume after docker cp through the subpath: %q", out)
	}
	// --volumes-from does not widen it to the whole volume.
	if out, err := d.Docker(t, "run", "--rm", "--volumes-from", "subr", ref, "true"); err == nil || !strings.Contains(out, "has a subpath") {
		t.Errorf("--volumes-from a container with a subpath: %v, %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", "subr")
	if ps := dockerOK(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
	dockerOK(t, d, "volume", "rm", "sv")

	// A subpath mounted over a directory of the image is filled from it
	// when empty, as Docker does; the rest of the volume stays as it is.
	dockerOK(t, d, "run", "--rm", "-v", "cv:/v", ref, "sh", "-c", "mkdir /v/bin && echo x > /v/keep")
	if out, err := d.Docker(t, "run", "--rm", "--mount", "type=volume,src=cv,dst=/bin,volume-subpath=bin", ref, "ls", "/bin/busybox"); err != nil || out != "/bin/busybox\n" {
		t.Errorf("a subpath over the image's /bin: %v, %q", err, out)
	}
	if out := dockerOK(t, d, "run", "--rm", "-v", "cv:/v", ref, "ls", "/v", "/v/bin/busybox"); out != "/v/bin/busybox\n\n/v:\nbin\nkeep" {
		t.Errorf("the volume after the copy into its subpath: %q", out)
	}
	dockerOK(t, d, "volume", "rm", "cv")
}
