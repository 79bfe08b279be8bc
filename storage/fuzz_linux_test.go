package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"path"
	"runtime"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// The archives of docker import and docker load are untrusted: whatever
// their entries, links and manifest say, nothing may be written outside
// the store, and a bad archive must be refused as an invalid argument
// without leaving an image or a layer behind. The archives are written
// from scripts (fuzztar_linux_test.go).

// hostileEntries are the seeds both targets share: escapes through "..",
// absolute names, symlinks and hard links, whiteouts, devices, huge and
// truncated entries.
var hostileEntries = []string{
	"d etc\nf etc/hello hi",
	"f ../x escaped",
	"f ../../canary/x escaped",
	"f @/x escaped",
	"f /abs/x data",
	"d a\nf a/../../x escaped",
	"l l /\nf l/x data",
	"l l @\nf l/x escaped",
	"l l ../../../../../../..\nf l/tmp/x data",
	"l l @.txt\nf l overwritten",
	"l d @\nd d\nf d/x escaped",
	"l a ..\nl a/b ..\nf a/b/x data",
	"h h @.txt",
	"h h ../../canary.txt",
	"l l @.txt\nh h l",
	"f a data\nh h a\nh h2 h",
	"d a\nf a/b data\nf a/.wh.b \nf .wh.a \nf .wh..wh..opq ",
	"f .wh.. \nf .wh.../x data",
	"c dev 1,3\nb blk 8,0\np fifo",
	"c @/dev 1,3",
	"x f SCHILY.xattr.user.test=1",
	"x f SCHILY.xattr.security.capability=\x01\x00\x00\x02",
	"s big 1099511627776",
	"f a data\ns b 100",
	"r this is not a tar archive",
	"f . data\nd ..\nf ./a data",
}

func FuzzImportImage(f *testing.F) {
	for _, s := range hostileEntries {
		f.Add(s, false, uint16(0))
	}
	f.Add("d etc\nf etc/hello hi", true, uint16(0))
	f.Add("d etc\nf etc/hello hi", false, uint16(700))
	f.Add("d etc\nf etc/hello hi", true, uint16(30))
	f.Add("", false, uint16(0))
	sb := newTarSandbox(f)
	f.Fuzz(func(t *testing.T, script string, gz bool, cut uint16) {
		b := newTarBuilder()
		for _, l := range parseScript(script, sb.canary) {
			b.add(l)
		}
		archive := finish(b.bytes(), gz, cut)
		before := sb.state(t)
		id, err := sb.s.ImportImage(context.Background(), bytes.NewReader(archive), imagestore.ImportConfig{}, "docker.io/library/imported:fuzz")
		sb.checkOutside(t)
		if err != nil {
			sb.checkFailure(t, "import", err, before)
			return
		}
		if _, ok := sb.state(t).images[id]; !ok {
			t.Errorf("import returned %s, which is not in the store", id)
		}
		sb.undo(t, before)
	})
}

func FuzzLoadImages(f *testing.F) {
	// Load's layers are applied as import's are: a few of the hostile
	// entries show that they go the same way. Fewer seeds: fuzz.sh's
	// short run must run them all before it starts fuzzing.
	for _, s := range []string{
		"L layer.tar\nl l @\nf l/x escaped",
		"L layer.tar\nh h @.txt",
		"L layer.tar\nf ../../canary/x escaped",
		"L layer.tar\nd a\nf a/b data\nf a/.wh.b \nf .wh..wh..opq ",
		"L layer.tar\nc dev 1,3\np fifo",
		"L layer.tar\nf a data\ns b 100",
		"L layer.tar\nr this is not a tar archive",
		"L layer.tar\nd etc\nf etc/hello hi\nT busybox:fuzz",
		"L layer.tar\nd etc\nf etc/hello hi\nT docker.io/library/baseline:1",
		"L a.tar\nd d\nf d/x data\nL b.tar\nf d/.wh.x \nf .wh.d \nT two:layers",
		"L a.tar\nl l @\nL b.tar\nf l/x escaped",
		"L a.tar\nl l ..\nL b.tar\nf l/canary/x escaped",
		"Z\nL layer.tar\nf a data",
		"L layer.tar\nZ\nf a data",
		"D\nL layer.tar\nf a data",
		"R ../../etc/passwd",
		"L layer.tar\nf a data\nR /etc/passwd",
		"C ../../etc/passwd\nL layer.tar\nf a data",
		"C @.txt\nL layer.tar\nf a data",
		"O\nl layer.tar ../../etc/passwd\nL layer.tar\nf a data",
		"O\nl layer.tar @.txt\nL layer.tar\nf a data",
		"O\nl link.tar real.tar\nA real.tar\nf a data\nR link.tar",
		"O\nl link.tar link.tar\nR link.tar",
		"O\nd layer.tar\nL layer.tar\nf a data",
		"O\nf manifest.json [\nL layer.tar\nf a data",
		"O\nl manifest.json ../../etc/passwd",
		"O\nf ../../x escaped\nL layer.tar\nf a data",
		"O\ns big 99999",
		"T Bad:Tag\nL layer.tar\nf a data",
		"T sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nL layer.tar\nf a data",
		"T busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		`M [{"Config":"../../../etc/passwd","Layers":["/etc/passwd"]}]`,
		`M [{"Config":"config.json","RepoTags":["a:1"],"Layers":[]}]`,
		`M [{"Config":"config.json","Layers":["layer.tar"]},{"Config":"nothing.json","Layers":["layer.tar"]}]`,
		"M {}",
		"M [{}]",
		"M null",
		// OCI layouts without manifest.json, or naming an index: read
		// as the layout they are.
		"O\nf index.json [",
		`O\nf index.json {"manifests":[]}`,
		`O\nf index.json {"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":2}]}`,
		`O\nf index.json {"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":2,"annotations":{"io.containerd.image.name":"Bad:Name"}}]}`,
		`O\nf blobs/sha256/../../../../canary/x escaped\nf index.json {"manifests":[]}`,
		`O\nl blobs/sha256/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef ../../etc/passwd\nf index.json {"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":2}]}`,
	} {
		f.Add(s, false, uint16(0))
	}
	f.Add("L layer.tar\nd etc\nf etc/hello hi\nT busybox:fuzz", true, uint16(0))
	f.Add("L layer.tar\nd etc\nf etc/hello hi", false, uint16(2000))
	f.Add("L layer.tar\nd etc\nf etc/hello hi", true, uint16(40))
	f.Add("", false, uint16(0))
	sb := newTarSandbox(f)
	f.Fuzz(func(t *testing.T, script string, gz bool, cut uint16) {
		archive := finish(dockerArchive(parseScript(script, sb.canary)), gz, cut)
		before := sb.state(t)
		loaded, err := sb.s.LoadImages(context.Background(), bytes.NewReader(archive), imagestore.LoadOptions{})
		sb.checkOutside(t)
		if err != nil && len(loaded) == 0 {
			sb.checkFailure(t, "load", err, before)
			return
		}
		if err != nil {
			// Images before the failing one stay, as in Docker; the
			// failing one leaves nothing (undo checks the layers).
			sb.checkFailure(t, "load", err, sb.state(t))
		}
		after := sb.state(t)
		reported := map[string]bool{}
		for _, li := range loaded {
			reported[li.ID] = true
			if _, ok := after.images[li.ID]; !ok {
				t.Errorf("load reported %s, which is not in the store", li.ID)
			}
		}
		for id := range after.images {
			if _, old := before.images[id]; !old && !reported[id] {
				t.Errorf("load stored %s without reporting it", id)
			}
		}
		sb.undo(t, before)
	})
}

// dockerArchive writes the docker-archive (docker save's format) a load
// script describes. Besides entry lines, which go into the current layer
// or the outer archive, its directives are:
//
//	L PATH  a new layer tar at PATH, listed in the manifest
//	A PATH  a new layer tar at PATH, not listed
//	R PATH  a manifest entry for PATH, which nothing writes
//	O       the next entries go into the outer archive, first of all
//	Z       the current and later layers are gzip-compressed
//	C PATH  the config's path (default config.json)
//	T TAG   a RepoTags entry
//	D       the config's diff IDs do not match the layers
//	M JSON  manifest.json as given instead of the generated one
//
// Entry lines before any L, A or O go into an implicit "layer.tar".
func dockerArchive(lines []scriptLine) []byte {
	type layer struct {
		path string
		tb   *tarBuilder
		gz   bool
	}
	var (
		layers             []*layer
		cur                *layer
		outer              []scriptLine
		toOuter, gz, wrong bool
		refs, tags         []string
		config             = "config.json"
		manifest           string
	)
	newLayer := func(p string, listed bool) {
		cur = &layer{path: p, tb: newTarBuilder(), gz: gz}
		layers = append(layers, cur)
		toOuter = false
		if listed {
			refs = append(refs, p)
		}
	}
	for _, l := range lines {
		whole := l.name
		if l.arg != "" {
			whole += " " + l.arg
		}
		switch l.kind {
		case 'L', 'A':
			newLayer(whole, l.kind == 'L')
		case 'R':
			refs = append(refs, whole)
		case 'O':
			toOuter = true
		case 'Z':
			gz = true
			if cur != nil {
				cur.gz = true
			}
		case 'C':
			config = whole
		case 'T':
			tags = append(tags, whole)
		case 'D':
			wrong = true
		case 'M':
			manifest = whole
		default:
			if toOuter {
				outer = append(outer, l)
				continue
			}
			if cur == nil {
				newLayer("layer.tar", true)
			}
			cur.tb.add(l)
		}
	}

	out := newTarBuilder()
	for _, l := range outer {
		out.add(l)
	}
	diffIDs := map[string]digest.Digest{}
	for _, l := range layers {
		b := l.tb.bytes()
		diffIDs[path.Clean(l.path)] = digest.FromBytes(b)
		out.add(scriptLine{kind: 'f', name: l.path, arg: string(finish(b, l.gz, 0))})
	}
	// A listed path that is a symlink of the outer archive is read through
	// it: its diff ID is that of the target.
	links := map[string]string{}
	for _, l := range outer {
		if l.kind == 'l' {
			links[path.Clean(l.name)] = path.Join(path.Dir(l.name), l.arg)
		}
	}
	ids := []digest.Digest{}
	for _, r := range refs {
		d, ok := diffIDs[path.Clean(r)]
		if !ok {
			d, ok = diffIDs[links[path.Clean(r)]]
		}
		if !ok || wrong {
			d = digest.FromString("not this layer")
		}
		ids = append(ids, d)
	}
	cfg, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": ids},
	})
	out.add(scriptLine{kind: 'f', name: config, arg: string(cfg)})
	if manifest == "" {
		m, _ := json.Marshal([]map[string]any{{"Config": config, "RepoTags": tags, "Layers": refs}})
		manifest = string(m)
	}
	out.add(scriptLine{kind: 'f', name: "manifest.json", arg: manifest})
	return out.bytes()
}
