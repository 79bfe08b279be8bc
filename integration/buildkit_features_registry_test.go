//go:build integration

package integration

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// BuildKit's features that use a registry (buildkit_features_test.go has
// the others): pushes, FROM pulled with the client's credentials,
// --pull, and cache export and import.

// registryFile reads the file at p (no leading slash) of the image ref in
// its registry, as its layers leave it; ok is false when no layer has it.
func registryFile(t *testing.T, ref, user, password, p string) (content string, ok bool) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var opts []remote.Option
	if user != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		t.Fatalf("%s is not in its registry: %v", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatalf("%s: a layer: %v", ref, err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: reading a layer: %v", ref, err)
			}
			if path.Clean(strings.TrimPrefix(h.Name, "./")) == p {
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				content, ok = string(b), true
			}
		}
		rc.Close()
	}
	return content, ok
}

// login runs docker login to reg with cfg as DOCKER_CONFIG.
func login(t *testing.T, d *daemon, cfg string, reg *registry) {
	t.Helper()
	if out, err := d.buildxIn(t, cfg, nil, reg.Password+"\n", "login", reg.Addr, "-u", reg.User, "--password-stdin"); err != nil || !strings.Contains(out, "Login Succeeded") {
		t.Fatalf("docker login %s: %v\n%s\n%s", reg.Addr, err, out, d.Log())
	}
}

// TestBuildKitPush: --push and --output type=image,push=true push the
// built image to a registry with auth, with the credentials of docker
// login, and the engine has the image too.
func TestBuildKitPush(t *testing.T) {
	d, ref := pulled(t)
	reg := startRegistry(t, "hutch", "s3cret")
	cfg := buildxConfig(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nARG N\nRUN echo \"pushed $N\" > /pushed.txt\n"})

	target := reg.Addr + "/pushed:1"
	if out, err := d.buildxIn(t, cfg, nil, "", "buildx", "build", "--progress=plain", "--push", "-t", target, dir); err == nil {
		t.Errorf("a push without docker login succeeded:\n%s", out)
	}
	login(t, d, cfg, reg)
	for i, args := range [][]string{
		{"--build-arg", "N=1", "--push", "-t", target},
		{"--build-arg", "N=2", "--output", "type=image,name=" + reg.Addr + "/pushed:2,push=true"},
	} {
		tag := reg.Addr + "/pushed:" + fmt.Sprint(i+1)
		out := bkIn(t, d, cfg, nil, append(append([]string{"buildx", "build", "--progress=plain"}, args...), dir)...)
		want := "pushed " + fmt.Sprint(i+1) + "\n"
		if got, ok := registryFile(t, tag, reg.User, reg.Password, "pushed.txt"); got != want {
			t.Errorf("build %v: /pushed.txt of %s in the registry: %q (%v), want %q\n%s", args, tag, got, ok, want, out)
		}
		if got := bkRun(t, d, tag, "cat /pushed.txt"); got+"\n" != want {
			t.Errorf("build %v: docker run %s: %q", args, tag, got)
		}
		if imgs := must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}"); !strings.Contains(imgs, tag) {
			t.Errorf("build %v: docker images lacks %s:\n%s", args, tag, imgs)
		}
	}
	inspect := bkIn(t, d, cfg, nil, "buildx", "imagetools", "inspect", "--raw", target)
	if !strings.Contains(inspect, `"mediaType"`) {
		t.Errorf("docker buildx imagetools inspect --raw %s:\n%s", target, inspect)
	}
}

// TestBuildKitPullAuth: FROM an image the engine lacks, in a registry
// with auth: BuildKit pulls it with the client's credentials after
// docker login, and fails without.
func TestBuildKitPullAuth(t *testing.T) {
	reg, private := privateBusybox(t)
	d := startDaemon(t)
	cfg := buildxConfig(t)
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + private + "\nRUN echo from-private > /p\n"})
	if out, err := d.buildxIn(t, cfg, nil, "", "build", "--progress=plain", "-t", "bkpriv", dir); err == nil {
		t.Errorf("FROM %s without docker login succeeded:\n%s", private, out)
	} else if !strings.Contains(out, "401 Unauthorized") {
		t.Errorf("FROM %s without docker login: want a 401 Unauthorized error:\n%s", private, out)
	}
	login(t, d, cfg, reg)
	out := bkIn(t, d, cfg, nil, "build", "--progress=plain", "-t", "bkpriv", dir)
	if got := bkRun(t, d, "bkpriv", "cat /p; busybox true && echo busybox"); got != "from-private\nbusybox" {
		t.Errorf("the files of bkpriv: %q\n%s", got, out)
	}
}

// TestBuildKitPullFlag: FROM uses the engine's image of that name, even
// where the registry's differs; --pull takes the registry's.
func TestBuildKitPullFlag(t *testing.T) {
	d, ref := pulled(t)
	cfg := buildxConfig(t)
	// The engine's ref now has /local-marker, the registry's does not.
	bkIn(t, d, cfg, nil, "build", "-t", ref, buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN echo local > /local-marker\n"}))
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nRUN (cat /local-marker 2>/dev/null || echo registry) > /seen\n"})
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "local"},
		{[]string{"--pull"}, "registry"},
	} {
		out := bkIn(t, d, cfg, nil, append(append([]string{"build", "--progress=plain", "-t", "bkpull"}, c.args...), dir)...)
		if got := bkRun(t, d, "bkpull", "cat /seen"); got != c.want {
			t.Errorf("build %v: FROM %s saw the %s image, want the %s one\n%s", c.args, ref, got, c.want, out)
		}
	}
}

// cachedVertices reads --progress=rawjson output: the steps (vertex names
// without their "[stage n/m] " prefix) BuildKit reported cached.
func cachedVertices(out string) map[string]bool {
	cached := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		var st struct {
			Vertexes []struct {
				Name   string
				Cached bool
			}
		}
		if json.Unmarshal([]byte(l), &st) != nil {
			continue
		}
		for _, v := range st.Vertexes {
			if v.Cached {
				_, name, _ := strings.Cut(v.Name, "] ")
				cached[name] = true
			}
		}
	}
	return cached
}

// TestBuildKitCacheExportImport: a build's cache exported (to a local
// directory, to a registry, inline in a pushed image) is imported by
// another daemon, whose build then finds its RUN steps CACHED and has
// the first build's files.
func TestBuildKitCacheExportImport(t *testing.T) {
	reg := startRegistry(t, "", "")
	for _, c := range []struct {
		name, tag string // tag: the first build's
		to, from  func(dir string) []string
	}{
		{"local", "bkcache",
			func(dir string) []string { return []string{"--cache-to", "type=local,mode=max,dest=" + dir} },
			func(dir string) []string { return []string{"--cache-from", "type=local,src=" + dir} }},
		{"registry", "bkcache",
			func(string) []string {
				return []string{"--cache-to", "type=registry,mode=max,ref=" + reg.Addr + "/cache:reg"}
			},
			func(string) []string { return []string{"--cache-from", "type=registry,ref=" + reg.Addr + "/cache:reg"} }},
		{"inline", reg.Addr + "/inline:1",
			func(string) []string { return []string{"--cache-to", "type=inline", "--push"} },
			func(string) []string { return []string{"--cache-from", reg.Addr + "/inline:1"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := busybox(t)
			dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + `
RUN cat /proc/sys/kernel/random/uuid > /stamp
RUN cat /proc/sys/kernel/random/uuid >> /stamp
`})
			cacheDir := t.TempDir()
			steps := []string{"RUN cat /proc/sys/kernel/random/uuid > /stamp", "RUN cat /proc/sys/kernel/random/uuid >> /stamp"}

			d1, _ := pulled(t)
			cfg := buildxConfig(t)
			out := bkIn(t, d1, cfg, nil, append(append([]string{"buildx", "build", "--progress=plain", "-t", c.tag}, c.to(cacheDir)...), dir)...)
			stamp := bkRun(t, d1, c.tag, "cat /stamp")
			if len(lines(stamp)) != 2 {
				t.Fatalf("the first build's /stamp: %q\n%s", stamp, out)
			}

			d2, _ := pulled(t)
			// rawjson: BuildKit's own vertex updates. The plain output's
			// last word on a step may be the fetch of its cached layer's
			// blob, which BuildKit reports on the step's vertex when the
			// export needs it.
			out = bkIn(t, d2, cfg, nil, append(append([]string{"buildx", "build", "--progress=rawjson", "-t", "bkcache"}, c.from(cacheDir)...), dir)...)
			cached := cachedVertices(out)
			for _, step := range steps {
				if !cached[step] {
					t.Errorf("build with the cache imported: step %q not CACHED (cached: %v):\n%s\n%s", step, cached, out, logsOfBuild(d2))
				}
			}
			if got := bkRun(t, d2, "bkcache", "cat /stamp"); got != stamp {
				t.Errorf("the second daemon's /stamp: %q, want the first's %q", got, stamp)
			}
		})
	}
}
