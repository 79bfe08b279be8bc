// Package testimage builds the images hutch's tests and benchmarks pull,
// from the static busybox of Debian's busybox-static package, and pushes
// them to a registry. Nothing binary lives in the repository: the images are
// generated, deterministically, on the machine that runs the tests.
package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/pgzip"
)

// BusyboxPath is the static busybox the images are made of.
var BusyboxPath = "/bin/busybox"

// Epoch is the creation time of every generated image and file, so that the
// same busybox always gives the same digests.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// OwnedUID and OwnedGID own /home/user in Busybox: a file not owned by root
// shows whether extraction kept ownership (full uid mapping) or dropped it
// (single-UID mode with ignore_chown_errors).
const (
	OwnedUID = 1234
	OwnedGID = 1234
)

// Busybox returns a one-layer image: /bin/busybox with a symlink per applet,
// /etc/passwd and /etc/group, /tmp, /home/user owned by OwnedUID, and a
// config running "sh".
func Busybox() (v1.Image, error) {
	layer, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	return build([]v1.Layer{layer}, []string{"sh"})
}

// HostBinary returns Busybox plus one layer holding the host's dynamically
// linked program bin, the shared libraries ldd finds for it and its loader,
// each at its host path, and a config running bin (the benchmark's iperf3
// image). LD_LIBRARY_PATH names the libraries' directories: the image has no
// ld.so.cache.
func HostBinary(bin string) (v1.Image, error) {
	base, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	paths, err := sharedLibs(bin)
	if err != nil {
		return nil, err
	}
	var files []file
	dirs := map[string]bool{}
	var libDirs []string
	for i, p := range append([]string{bin}, paths...) {
		body, err := os.ReadFile(p) // through symlinks: the image gets the file
		if err != nil {
			return nil, fmt.Errorf("testimage: %w", err)
		}
		rel := strings.TrimPrefix(path.Clean(p), "/")
		var parents []string
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if !dirs[d] {
				dirs[d] = true
				files = append(files, file{name: d + "/", mode: 0o755, dir: true})
			}
		}
		if i > 0 && !slices.Contains(libDirs, path.Dir(p)) {
			libDirs = append(libDirs, path.Dir(p))
		}
		files = append(files, file{name: rel, mode: 0o755, body: body})
	}
	layer, err := memLayer(files)
	if err != nil {
		return nil, err
	}
	img, err := build([]v1.Layer{base, layer}, []string{bin})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config.Env = append(cf.Config.Env, "LD_LIBRARY_PATH="+strings.Join(libDirs, ":"))
	return mutate.ConfigFile(img, cf)
}

// sharedLibs lists the files ldd names for bin: its libraries and its
// loader (the vDSO has no file). A static bin has none.
func sharedLibs(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("testimage: ldd %s: %w: %s", bin, err, out)
	}
	var paths []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("testimage: ldd %s: %s", bin, line)
		}
		if _, target, ok := strings.Cut(line, "=> "); ok {
			line = target
		}
		if p, _, _ := strings.Cut(line, " "); strings.HasPrefix(p, "/") && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// MultiLayer returns Busybox plus n small layers: layer i adds
// /data/layer<i>.txt, and the last one (n >= 2) also deletes
// /data/layer0.txt with a whiteout.
func MultiLayer(n int) (v1.Image, error) {
	base, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	layers := []v1.Layer{base}
	for i := range n {
		files := []file{{name: "data/", mode: 0o755, dir: true}, {
			name: fmt.Sprintf("data/layer%d.txt", i),
			mode: 0o644,
			body: bytes.Repeat([]byte(fmt.Sprintf("layer %d\n", i)), 4096*(i+1)),
		}}
		if i == n-1 && n >= 2 {
			files = append(files, file{name: "data/.wh.layer0.txt", mode: 0o644})
		}
		l, err := memLayer(files)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return build(layers, []string{"sh"})
}

// Large returns Busybox plus one layer holding a copy of the tree at dir
// under /data/<base name of dir>. With dir = $(go env GOROOT)/src this is
// the ~150 MB, ~11 500 file image of the pull benchmark. The layer is
// compressed once into a file under tmpDir; call cleanup when done.
func Large(dir, tmpDir string) (img v1.Image, cleanup func(), err error) {
	base, err := busyboxLayer()
	if err != nil {
		return nil, nil, err
	}
	f, err := os.CreateTemp(tmpDir, "testimage-large-*.tar.gz")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.Remove(f.Name()) }
	if err := writeTree(f, dir, path.Join("data", filepath.Base(dir))); err != nil {
		f.Close()
		cleanup()
		return nil, nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return nil, nil, err
	}
	layer, err := tarball.LayerFromFile(f.Name())
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	img, err = build([]v1.Layer{base, layer}, []string{"sh"})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return img, cleanup, nil
}

// ForPlatform returns img with its config claiming another platform, for
// manifest lists: the content stays this machine's busybox.
func ForPlatform(img v1.Image, osName, arch, variant string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = osName, arch, variant
	return mutate.ConfigFile(img, cf)
}

// Index returns a manifest list of the images, each under the platform its
// config names.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant},
		}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.DockerManifestList), adds...), nil
}

// LayerFile writes the compressed layer index of img to w (negative counts
// from the top): what the benchmark compares against `gzip -dc | tar -x`.
func LayerFile(img v1.Image, index int, w io.Writer) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if index < 0 {
		index += len(layers)
	}
	if index < 0 || index >= len(layers) {
		return fmt.Errorf("testimage: image has %d layers, no layer %d", len(layers), index)
	}
	rc, err := layers[index].Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

// PushOption changes how Push talks to the registry.
type PushOption func(*pushConfig)

type pushConfig struct{ user, password string }

// WithBasicAuth sends a username and password.
func WithBasicAuth(user, password string) PushOption {
	return func(c *pushConfig) { c.user, c.password = user, password }
}

// Push uploads img as ref ("127.0.0.1:5000/busybox:latest"). Registries on
// loopback are spoken to over plain HTTP.
func Push(ctx context.Context, ref string, img v1.Image, opts ...PushOption) error {
	r, ropts, err := pushSetup(ctx, ref, opts)
	if err != nil {
		return err
	}
	return remote.Write(r, img, ropts...)
}

// PushIndex uploads a manifest list and its images as ref.
func PushIndex(ctx context.Context, ref string, idx v1.ImageIndex, opts ...PushOption) error {
	r, ropts, err := pushSetup(ctx, ref, opts)
	if err != nil {
		return err
	}
	return remote.WriteIndex(r, idx, ropts...)
}

func pushSetup(ctx context.Context, ref string, opts []PushOption) (name.Reference, []remote.Option, error) {
	var cfg pushConfig
	for _, o := range opts {
		o(&cfg)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, nil, err
	}
	ropts := []remote.Option{remote.WithContext(ctx)}
	if cfg.user != "" {
		ropts = append(ropts, remote.WithAuth(&authn.Basic{Username: cfg.user, Password: cfg.password}))
	}
	return r, ropts, nil
}

func build(layers []v1.Layer, cmd []string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = runtime.GOARCH
	cf.OS = "linux"
	cf.Created = v1.Time{Time: Epoch}
	cf.Config.Cmd = cmd
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cf.History = nil
	for range layers {
		cf.History = append(cf.History, v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "hutch testimage"})
	}
	return mutate.ConfigFile(img, cf)
}

type file struct {
	name     string
	mode     int64
	dir      bool
	link     string // symlink target
	uid, gid int
	body     []byte
}

func busyboxLayer() (v1.Layer, error) {
	files, err := busyboxFiles(
		"root:x:0:0:root:/root:/bin/sh\nuser:x:1234:1234:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"root:x:0:\nuser:x:1234:\nnogroup:x:65534:\n")
	if err != nil {
		return nil, err
	}
	return memLayer(files)
}

// busyboxFiles lists the busybox tree with the given /etc/passwd and
// /etc/group.
func busyboxFiles(passwd, group string) ([]file, error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("testimage: %w (install busybox-static)", err)
	}
	out, err := exec.Command(BusyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("testimage: %s --list-full: %w", BusyboxPath, err)
	}
	files := []file{
		{name: "bin/", mode: 0o755, dir: true},
		{name: "bin/busybox", mode: 0o755, body: bin},
		{name: "dev/", mode: 0o755, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/user/", mode: 0o750, dir: true, uid: OwnedUID, gid: OwnedGID},
		{name: "home/user/.profile", mode: 0o640, uid: OwnedUID, gid: OwnedGID, body: []byte("export PS1='$ '\n")},
		{name: "proc/", mode: 0o755, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "sbin/", mode: 0o755, dir: true},
		{name: "sys/", mode: 0o755, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: "usr/sbin/", mode: 0o755, dir: true},
		{name: "var/", mode: 0o755, dir: true},
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)
	for _, a := range applets {
		if a == "bin/busybox" || !strings.Contains(a, "/") {
			continue
		}
		files = append(files, file{name: a, mode: 0o777, link: "/bin/busybox"})
	}
	return files, nil
}

// memLayer builds a gzip-compressed layer in memory.
func memLayer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: Epoch, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag = tar.TypeDir
		case f.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// writeTree writes the tree at dir as a gzip-compressed tar with the given
// prefix, parents first, owned by root.
func writeTree(w io.Writer, dir, prefix string) error {
	zw := pgzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	var parents []string
	for p := prefix; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		parents = append([]string{p}, parents...)
	}
	for i, p := range parents {
		if i == len(parents)-1 {
			break // the walk writes the prefix directory itself
		}
		if err := tw.WriteHeader(&tar.Header{Name: p + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: Epoch}); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = path.Join(prefix, filepath.ToSlash(rel))
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = Epoch, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
