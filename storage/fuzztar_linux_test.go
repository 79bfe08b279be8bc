package storage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// The fuzz targets of import and load (fuzz_linux_test.go) describe their
// archives in a small line language instead of raw tar bytes: the fuzzer
// mutates names, link targets and kinds of entries, where it would mostly
// break header checksums of a raw archive. One line is one step:
//
//	d NAME            a directory
//	f NAME TEXT       a regular file holding TEXT
//	x NAME KEY=VALUE  a regular file with a PAX record (xattrs, long names)
//	l NAME TARGET     a symlink
//	h NAME TARGET     a hard link
//	c NAME [MAJ,MIN]  a character device (b: a block device)
//	p NAME            a fifo
//	s NAME SIZE       a file header of SIZE bytes with a short body: the
//	                  archive ends there, truncated
//	r TEXT            TEXT as raw bytes between entries
//
// "@" in a name or argument stands for the canary directory next to the
// store ("@.txt" is the canary file), so that absolute links can aim at
// it. Upper-case lines are the load target's directives (fuzz_linux_test.go).

// scriptLine is one line of a script: a kind, a name and the rest.
type scriptLine struct {
	kind      byte
	name, arg string
}

// maxScriptLines bounds the work of one input.
const maxScriptLines = 24

// parseScript splits a script into lines, "@" replaced by canary.
func parseScript(script, canary string) []scriptLine {
	var out []scriptLine
	for _, raw := range strings.Split(script, "\n") {
		if raw == "" {
			continue
		}
		if len(out) == maxScriptLines {
			break
		}
		raw = strings.ReplaceAll(raw, "@", canary)
		l := scriptLine{kind: raw[0]}
		rest := strings.TrimPrefix(raw[1:], " ")
		if l.kind == 'r' {
			l.arg = rest
		} else {
			l.name, l.arg, _ = strings.Cut(rest, " ")
		}
		out = append(out, l)
	}
	return out
}

// tarBuilder writes script lines as tar entries.
type tarBuilder struct {
	buf       bytes.Buffer
	tw        *tar.Writer
	truncated bool // an 's' line ended the archive
}

func newTarBuilder() *tarBuilder {
	b := &tarBuilder{}
	b.tw = tar.NewWriter(&b.buf)
	return b
}

// add writes one entry line; lines of other kinds are ignored.
func (b *tarBuilder) add(l scriptLine) {
	if b.truncated {
		return
	}
	h := &tar.Header{Name: l.name, Mode: 0o644, ModTime: time.Unix(0, 0)}
	var body string
	switch l.kind {
	case 'd':
		h.Typeflag, h.Mode = tar.TypeDir, 0o755
	case 'f':
		h.Typeflag, body = tar.TypeReg, l.arg
	case 'x':
		k, v, _ := strings.Cut(l.arg, "=")
		h.Typeflag, h.PAXRecords, h.Format = tar.TypeReg, map[string]string{k: v}, tar.FormatPAX
	case 'l', 'h':
		h.Typeflag, h.Linkname = tar.TypeSymlink, l.arg
		if l.kind == 'h' {
			h.Typeflag = tar.TypeLink
		}
	case 'c', 'b':
		h.Typeflag = tar.TypeChar
		if l.kind == 'b' {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = 1, 3
		if maj, min, ok := strings.Cut(l.arg, ","); ok {
			h.Devmajor, _ = strconv.ParseInt(maj, 10, 32)
			h.Devminor, _ = strconv.ParseInt(min, 10, 32)
		}
	case 'p':
		h.Typeflag = tar.TypeFifo
	case 's':
		h.Typeflag = tar.TypeReg
		size, err := strconv.ParseInt(l.arg, 10, 64)
		if err != nil || size <= 0 {
			size = 1 << 40
		}
		h.Size = size
		if b.tw.WriteHeader(h) == nil {
			_, _ = b.tw.Write([]byte("partial"))
			_ = b.tw.Flush() // fails: the body is short; what was written stays
			b.truncated = true
		}
		return
	case 'r':
		if b.tw.Flush() == nil {
			b.buf.WriteString(l.arg)
		}
		return
	default:
		return
	}
	h.Size = int64(len(body))
	if b.tw.WriteHeader(h) != nil {
		return // not an entry the archive can hold: left out
	}
	_, _ = b.tw.Write([]byte(body))
}

// bytes ends the archive (unless truncated) and returns it.
func (b *tarBuilder) bytes() []byte {
	if !b.truncated {
		_ = b.tw.Close()
	}
	return b.buf.Bytes()
}

// finish compresses an archive with gzip and cuts it at cut bytes (0:
// whole), as the fuzz inputs ask.
func finish(archive []byte, gz bool, cut uint16) []byte {
	if gz {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(archive)
		_ = zw.Close()
		archive = zb.Bytes()
	}
	if cut > 0 && int(cut) < len(archive) {
		archive = archive[:cut]
	}
	return archive
}

// tarSandbox is a store shared by the inputs of one fuzz worker, in a
// directory that also holds a canary directory and a canary file: no
// archive may write into the one, change the other, or add anything
// beside the store. It holds one image from the start, whose name and
// record must survive every failed input.
type tarSandbox struct {
	s            *Store
	base, canary string
	baseline     string // ID of the image imported at the start
	baseName     string
	baseTree     string // baselineTree at the start
}

const canaryText = "canary: nothing may change me\n"

// fuzzStore opens the store of one fuzz worker's inputs, on /dev/shm
// when it can: on tmpfs the syncs of the store's records cost nothing,
// which makes an input several times faster, and a short fuzz run must
// get through its corpus before it can fuzz at all.
func fuzzStore(f *testing.F) *Store {
	f.Helper()
	sweepFuzzStores("/dev/shm")
	dir, err := os.MkdirTemp("/dev/shm", fmt.Sprintf("%s%d-", fuzzDirPrefix, os.Getpid()))
	if err != nil {
		dir = f.TempDir()
	} else {
		f.Cleanup(func() { os.RemoveAll(dir) })
	}
	s, err := Open(context.Background(), Options{GraphRoot: dir + "/graph", RunRoot: dir + "/run", SingleUID: singleUID(f)})
	if err != nil {
		f.Fatalf("Open: %v", err)
	}
	f.Cleanup(func() {
		if err := s.Close(); err != nil {
			f.Errorf("Close: %v", err)
		}
	})
	return s
}

const fuzzDirPrefix = "hutch-fuzz-"

// sweepFuzzStores removes the stores of fuzz workers that died before
// their clean-up: the fuzzing coordinator kills a worker that does not
// stop within a second of being told to. A store's directory is named
// after its worker's pid; as root, the driver's mount is left too.
func sweepFuzzStores(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), fuzzDirPrefix)
		pid, _, _ := strings.Cut(rest, "-")
		if _, err := strconv.Atoi(pid); !ok || err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // a worker still running
		}
		dir := filepath.Join(root, e.Name())
		mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
		for _, m := range mounts {
			_ = unix.Unmount(m.Mountpoint, unix.MNT_DETACH)
		}
		_ = os.RemoveAll(dir)
	}
}

func newTarSandbox(f *testing.F) *tarSandbox {
	s := fuzzStore(f)
	sb := &tarSandbox{
		s:        s,
		base:     filepath.Dir(s.GraphRoot()),
		baseName: "docker.io/library/baseline:1",
	}
	sb.canary = filepath.Join(sb.base, "canary")
	if err := os.Mkdir(sb.canary, 0o777); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(sb.canary+".txt", []byte(canaryText), 0o666); err != nil {
		f.Fatal(err)
	}
	id, err := s.ImportImage(context.Background(), bytes.NewReader(rootfsTar(f, false)),
		imagestore.ImportConfig{Comment: "baseline", Image: dockerspec.DockerOCIImage{}}, sb.baseName)
	if err != nil {
		f.Fatal(err)
	}
	sb.baseline = id
	sb.baseTree = sb.baselineTree(f)
	return sb
}

// baselineTree describes the files of the baseline image's layer, as the
// driver keeps them: an archive that escaped its own layer into another
// would change them.
func (sb *tarSandbox) baselineTree(t testing.TB) string {
	t.Helper()
	img, err := sb.s.byID(sb.baseline)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(sb.s.GraphRoot(), "overlay", img.TopLayer, "diff")
	if sb.s.Driver() == DriverVFS {
		dir = filepath.Join(sb.s.GraphRoot(), "vfs", "dir", img.TopLayer)
	}
	var b strings.Builder
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", strings.TrimPrefix(p, dir), info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// storeState is what a failed operation must not change.
type storeState struct {
	images map[string][]string // ID → names
	layers []string
}

func (sb *tarSandbox) state(t *testing.T) storeState {
	t.Helper()
	imgs, err := sb.s.Images()
	if err != nil {
		t.Fatal(err)
	}
	st := storeState{images: map[string][]string{}}
	for _, img := range imgs {
		st.images[img.ID] = slices.Sorted(slices.Values(img.Names))
	}
	layers, err := sb.s.Backend().Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		st.layers = append(st.layers, l.ID)
	}
	slices.Sort(st.layers)
	return st
}

// checkOutside fails t if anything outside the store, or the baseline
// image's layer, changed.
func (sb *tarSandbox) checkOutside(t *testing.T) {
	t.Helper()
	if names := dirNames(t, sb.base); !slices.Equal(names, []string{"canary", "canary.txt", "graph", "run"}) {
		t.Errorf("beside the store: %q", names)
	}
	if names := dirNames(t, sb.canary); len(names) != 0 {
		t.Errorf("written into the canary directory: %q", names)
	}
	b, err := os.ReadFile(sb.canary + ".txt")
	if err != nil || string(b) != canaryText {
		t.Errorf("canary file = %q, %v", b, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(sb.canary+".txt", &st); err != nil || st.Nlink != 1 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Errorf("canary file: mode %o, %d links (%v)", st.Mode, st.Nlink, err)
	}
	if names := dirNames(t, sb.s.tmpDir); len(names) != 0 {
		t.Errorf("temporary files left in the store: %q", names)
	}
	if tree := sb.baselineTree(t); tree != sb.baseTree {
		t.Errorf("the baseline image's layer changed:\n%s\nwas\n%s", tree, sb.baseTree)
	}
}

// checkFailure fails t unless err is a clear invalid-argument error and the
// store is as it was before.
func (sb *tarSandbox) checkFailure(t *testing.T, op string, err error, before storeState) {
	t.Helper()
	if !errors.Is(err, errdefs.ErrInvalidArgument) || strings.TrimSpace(err.Error()) == "" {
		t.Errorf("%s: error %q (%T) is not an invalid argument", op, err, err)
	}
	after := sb.state(t)
	if !maps.EqualFunc(before.images, after.images, slices.Equal) {
		t.Errorf("%s failed but changed the images: %v, then %v", op, before.images, after.images)
	}
	if !slices.Equal(before.layers, after.layers) {
		t.Errorf("%s failed but changed the layers: %q, then %q", op, before.layers, after.layers)
	}
}

// undo deletes the images an operation added, gives the baseline its name
// back if the operation took it, and checks that the store is as before.
func (sb *tarSandbox) undo(t *testing.T, before storeState) {
	t.Helper()
	ctx := context.Background()
	for id := range sb.state(t).images {
		if _, ok := before.images[id]; !ok {
			if _, err := sb.s.DeleteImage(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(sb.state(t).images[sb.baseline], before.images[sb.baseline]) {
		if err := sb.s.TagImage(ctx, sb.baseline, sb.baseName); err != nil {
			t.Fatal(err)
		}
	}
	after := sb.state(t)
	if !maps.EqualFunc(before.images, after.images, slices.Equal) || !slices.Equal(before.layers, after.layers) {
		t.Fatalf("deleting the new images left %v %q, want %v %q", after.images, after.layers, before.images, before.layers)
	}
}
