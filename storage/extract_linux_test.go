package storage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/vbatts/tar-split/tar/asm"
	tsstorage "github.com/vbatts/tar-split/tar/storage"
	"go.podman.io/storage/pkg/archive"
	"go.podman.io/storage/pkg/chrootarchive"
	"go.podman.io/storage/pkg/unshare"
	"golang.org/x/sys/unix"
)

// tarEntry is one entry of a generated test archive.
type tarEntry struct {
	name, link string
	typ        byte
	mode       int64
	uid, gid   int
	body       string
	mtime      time.Time
	atime      time.Time
	pax        map[string]string
}

func makeTar(t testing.TB, entries []tarEntry, trailer []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: e.mtime, AccessTime: e.atime, PAXRecords: e.pax, Format: tar.FormatPAX}
		if h.ModTime.IsZero() {
			h.ModTime = time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
		}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if h.Typeflag == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return append(buf.Bytes(), trailer...)
}

func dir(name string, mode int64) tarEntry { return tarEntry{name: name, typ: tar.TypeDir, mode: mode} }
func file(name, body string, mode int64) tarEntry {
	return tarEntry{name: name, typ: tar.TypeReg, mode: mode, body: body}
}
func symlink(name, target string) tarEntry {
	return tarEntry{name: name, typ: tar.TypeSymlink, link: target, mode: 0o777}
}
func hardlink(name, target string) tarEntry {
	return tarEntry{name: name, typ: tar.TypeLink, link: target, mode: 0o644}
}

// extractCases are archives whose extraction must match
// containers/storage's, the hostile ones included.
var extractCases = []struct {
	name    string
	entries []tarEntry
	trailer []byte
	// hostPaths: the layer cannot be read back by name on the host with
	// tar-split's path getter (whiteouts, symlinked parents, "..", names
	// replaced by later entries).
	hostPaths bool
}{
	{name: "tree", entries: []tarEntry{
		dir("bin/", 0o755), file("bin/sh", "#!", 0o755), file("etc/passwd", "root:x:0:0", 0o644),
		dir("tmp", 0o1777), dir("srv/", 0o2750), file("srv/data", "d", 0o640), file("usr/bin/su", "su", 0o4755),
		file("secret", "s", 0o600), file("empty", "", 0o644), symlink("bin/busybox", "/bin/sh"),
		symlink("rel", "../../etc"), symlink("dangling", "nowhere"), hardlink("bin/sh2", "bin/sh"),
		{name: "fifo", typ: tar.TypeFifo, mode: 0o600}, {name: "dev/null", typ: tar.TypeChar, mode: 0o666},
	}},
	{name: "owners", entries: []tarEntry{
		{name: "home/u/", typ: tar.TypeDir, mode: 0o700, uid: 1000, gid: 1000},
		{name: "home/u/f", typ: tar.TypeReg, mode: 0o4750, uid: 1000, gid: 100, body: "x"},
		{name: "home/u/l", typ: tar.TypeSymlink, link: "f", uid: 1000, gid: 1000},
	}},
	{name: "root entry", entries: []tarEntry{
		{name: "./", typ: tar.TypeDir, mode: 0o750, uid: 0, gid: 0}, file("./a", "a", 0o644),
	}},
	{name: "root not a dir", entries: []tarEntry{file(".", "", 0o644)}},
	{name: "whiteouts", entries: []tarEntry{
		dir("d/", 0o755), file("d/.wh..wh..opq", "", 0o644), file(".wh.gone", "", 0o644),
		file("x/y/.wh.z", "", 0o644), file(".wh.foo", "", 0), file("foo/.wh.bar", "", 0),
	}, hostPaths: true},
	{name: "invalid whiteout", entries: []tarEntry{file(".wh..", "", 0o644)}},
	// tar-split refuses a name twice; other spellings of it replace.
	{name: "replacements", entries: []tarEntry{
		file("a", "1", 0o644), dir("/a/", 0o700), file("a/in", "i", 0o644),
		dir("b/", 0o755), file("b/in", "i", 0o644), file("/b", "now a file", 0o600),
		file("c", "c", 0o644), symlink("/c", "/etc"), symlink("e", "/x"), file("/e", "e", 0o644),
		dir("m/", 0o755), file("m/keep", "k", 0o644), dir("/m/", 0o711),
		dir("real/", 0o755), file("real/x", "old", 0o644), symlink("lnk", "real"), file("lnk/x", "new", 0o600),
		{name: "fifo", typ: tar.TypeFifo, mode: 0o600}, hardlink("/fifo", "real/x"),
	}, hostPaths: true},
	{name: "symlink escapes stay inside", entries: []tarEntry{
		symlink("evil", "/"), file("evil/etc/shadow", "owned", 0o600),
		symlink("up", "../../../.."), dir("up/sub/", 0o755), file("up/sub/f", "f", 0o644),
		dir("real/", 0o755), symlink("via", "real"), file("via/g", "g", 0o644),
		hardlink("h", "evil/etc/shadow"),
	}, hostPaths: true},
	{name: "dot dot name", entries: []tarEntry{file("../escape", "x", 0o644)}, hostPaths: true},
	{name: "dot dot inside", entries: []tarEntry{file("a/../../escape", "x", 0o644)}, hostPaths: true},
	{name: "absolute name", entries: []tarEntry{file("/abs/file", "x", 0o644)}},
	{name: "hardlink out", entries: []tarEntry{hardlink("h", "../outside")}},
	{name: "hardlink absolute out", entries: []tarEntry{hardlink("h", "/../outside")}},
	{name: "hardlink to symlink", entries: []tarEntry{symlink("s", "t"), hardlink("h", "s")}},
	{name: "hardlink missing", entries: []tarEntry{hardlink("h", "none")}},
	{name: "duplicate", entries: []tarEntry{file("a", "1", 0o644), file("a", "2", 0o644)}},
	{name: "xattrs", entries: []tarEntry{
		{name: "f", typ: tar.TypeReg, mode: 0o644, body: "x", pax: map[string]string{
			"SCHILY.xattr.user.k": "v", "SCHILY.xattr.security.selinux": "system_u:object_r:x:s0"}},
		{name: "d/", typ: tar.TypeDir, mode: 0o755, pax: map[string]string{"SCHILY.xattr.user.k": "dir"}},
	}},
	{name: "times", entries: []tarEntry{
		{name: "old", typ: tar.TypeReg, mode: 0o644, mtime: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "acc", typ: tar.TypeReg, mode: 0o644, atime: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "d/", typ: tar.TypeDir, mode: 0o755, atime: time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC)},
		{name: "s", typ: tar.TypeSymlink, link: "old", mtime: time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)},
	}},
	{name: "long and odd names", entries: []tarEntry{
		file(strings.Repeat("long/", 40)+"f", "l", 0o644), file("caf\xe9", "latin1", 0o644), file("sp ace", "", 0o644),
	}},
	{name: "padding after the end", entries: []tarEntry{file("a", "a", 0o644)}, trailer: make([]byte, 8192)},
	{name: "dir replaced by symlink", entries: []tarEntry{
		dir("d/", 0o755), file("d/f", "f", 0o644), symlink("/d", "e"), dir("e/", 0o755), file("/d/g", "g", 0o644),
	}, hostPaths: true},
	{name: "dangling symlink parents", entries: []tarEntry{
		symlink("a", "b"), file("a/x", "x", 0o644), symlink("c", "/d/e"), file("c/f", "f", 0o644),
		dir("g/", 0o755), symlink("g/h", "../i"), file("g/h/j", "j", 0o644),
	}, hostPaths: true},
	{name: "symlink loop", entries: []tarEntry{symlink("l1", "l2"), symlink("l2", "l1"), file("l1/x", "x", 0o644)}},
	{name: "hardlink dot dot", entries: []tarEntry{file("outside", "o", 0o644), hardlink("h", "../outside")}},
	// More files than may wait open for the metadata pipe, and links
	// whose mode and times are not their targets'.
	{name: "many files", entries: manyFiles(3 * maxOpenFiles)},
	// Files met again as parents, and names made again.
	{name: "file as a parent", entries: []tarEntry{file("p", "1", 0o644), file("p/q", "2", 0o644)}},
	{name: "file as a parent through a symlink", entries: []tarEntry{
		file("p", "1", 0o644), symlink("l", "p"), file("l/q", "2", 0o644),
	}},
	{name: "whiteout of a file of the layer", entries: []tarEntry{file("w", "x", 0o644), file(".wh.w", "", 0o644)}},
	{name: "whiteout under a file", entries: []tarEntry{file("p", "x", 0o644), file("p/.wh.q", "", 0o644)}},
	{name: "file replaced at once", entries: []tarEntry{
		file("d/f", "1", 0o644), symlink("/d/f", "x"), dir("e/", 0o755), file("e/g", "g", 0o600), dir("/e/g/", 0o700),
	}, hostPaths: true},
	{name: "more directories than are kept open", entries: manyDirs(maxCachedDirs + maxCachedDirs/2), hostPaths: true},
}

// manyDirs is n directories with a file each, then more files in the
// first of them, which are no longer in the extraction's cache, one of
// them replacing a file made before.
func manyDirs(n int) []tarEntry {
	var es []tarEntry
	for i := range n {
		es = append(es, dir(fmt.Sprintf("d%d/", i), 0o750), file(fmt.Sprintf("d%d/f", i), "file "+strconv.Itoa(i), 0o640))
	}
	for i := range 8 {
		es = append(es, file(fmt.Sprintf("d%d/g", i), "again", 0o600))
	}
	return append(es, symlink("/d1/f", "g"))
}

// manyFiles is n files in a few directories, of sizes from 0 to 40 KiB,
// then hard links to some of them with another mode and time.
func manyFiles(n int) []tarEntry {
	var es []tarEntry
	for d := range 4 {
		es = append(es, dir(fmt.Sprintf("d%d/", d), 0o755))
	}
	link := func(i int) tarEntry {
		return tarEntry{name: fmt.Sprintf("link%d", i), typ: tar.TypeLink, link: fmt.Sprintf("d%d/f%d", i%4, i),
			mode: 0o640, mtime: time.Date(2010, 6, 6, 0, 0, 0, 0, time.UTC)}
	}
	for i := range n {
		es = append(es, tarEntry{name: fmt.Sprintf("d%d/f%d", i%4, i), typ: tar.TypeReg, mode: int64(0o600 + i%0o100),
			body: strings.Repeat(string(rune('a'+i%26)), (i*397)%(40<<10)), mtime: time.Date(2020, 1, 1+i%28, 0, 0, 0, 0, time.UTC)})
		if i%50 == 7 {
			es = append(es, link(i)) // while its target is surely unfinished
		}
	}
	for i := 0; i < n; i += n / 8 {
		es = append(es, link(i+1))
	}
	return es
}

// bothExtractions is one archive extracted by the library (the chroot
// child the overlay driver runs, with its tar-split metadata) and by
// extractLayer, side by side under base.
type bothExtractions struct {
	base, libDir, ourDir string
	libMeta, ourMeta     bytes.Buffer
	libErr, ourErr       error
	res                  extractResult
	data                 []byte // the stream
}

func extractBoth(t testing.TB, data []byte) *bothExtractions {
	t.Helper()
	single := singleUID(t)
	b := &bothExtractions{base: t.TempDir(), data: data}
	b.libDir, b.ourDir = filepath.Join(b.base, "lib", "layer"), filepath.Join(b.base, "ours", "layer")
	for _, d := range []string{b.libDir, b.ourDir} {
		if err := os.MkdirAll(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	opts := &archive.TarOptions{WhiteoutFormat: archive.OverlayWhiteoutFormat, InUserNS: unshare.IsRootless(), IgnoreChownErrors: single}
	b.libErr = func() error {
		payload, done, err := asm.NewInputTarStreamWithDone(bytes.NewReader(data), tsstorage.NewJSONPacker(&b.libMeta), nil)
		if err != nil {
			return err
		}
		err = chrootarchive.UntarUncompressed(payload, b.libDir, opts)
		if err == nil {
			_, err = io.Copy(io.Discard, payload)
		}
		payload.Close()
		if derr := <-done; err == nil {
			err = derr
		}
		return err
	}()
	b.res, b.ourErr = extractLayer(bytes.NewReader(data), b.ourDir, extractOptions{
		idMappings: idMappingsOf(opts), ignoreChownErrors: single, overlayWhiteouts: true,
		opaqueXattr: archive.GetOverlayXattrName("opaque"), inUserNS: opts.InUserNS,
	}, tsstorage.NewJSONPacker(&b.ourMeta))
	return b
}

// compare fails t unless both extractions succeeded or both failed, wrote
// nothing beside the layer, and (when they succeeded) made the same tree
// and the same metadata. It reports whether they succeeded.
func (b *bothExtractions) compare(t testing.TB, since time.Time) bool {
	t.Helper()
	if (b.libErr == nil) != (b.ourErr == nil) {
		t.Fatalf("library error %v, ours %v", b.libErr, b.ourErr)
	}
	for _, side := range []string{"lib", "ours"} {
		if names := dirNames(t, filepath.Join(b.base, side)); !slices.Equal(names, []string{"layer"}) {
			t.Errorf("%s: the extraction wrote beside the layer: %q", side, names)
		}
	}
	if b.libErr != nil {
		return false
	}
	if want := digest.FromBytes(b.data); b.res.diffID != want || b.res.size != int64(len(b.data)) {
		t.Errorf("stream digest %s and size %d, want %s and %d", b.res.diffID, b.res.size, want, len(b.data))
	}
	if !bytes.Equal(b.libMeta.Bytes(), b.ourMeta.Bytes()) {
		t.Errorf("tar-split metadata differs:\nlibrary %s\nours    %s", b.libMeta.Bytes(), b.ourMeta.Bytes())
	}
	if lib, ours := snapshot(t, b.libDir, since), snapshot(t, b.ourDir, since); !slices.Equal(lib, ours) {
		t.Errorf("trees differ:\nlibrary %s\nours    %s", strings.Join(lib, "\n        "), strings.Join(ours, "\n        "))
	}
	return true
}

// TestExtractLayerMatchesLibrary extracts each archive with the library's
// extraction and with extractLayer and compares outcomes, trees and
// tar-split metadata; the metadata must reassemble the archive.
func TestExtractLayerMatchesLibrary(t *testing.T) {
	for _, tc := range extractCases {
		t.Run(tc.name, func(t *testing.T) {
			data := makeTar(t, tc.entries, tc.trailer)
			since := time.Now().Add(-time.Second)
			b := extractBoth(t, data)
			if !b.compare(t, since) {
				return
			}
			if tc.name == "root entry" && (b.res.rootMode == nil || *b.res.rootMode != fs.ModeDir|0o750) {
				t.Errorf("root mode = %v, want drwxr-x---", b.res.rootMode)
			}
			reassembled := asm.NewOutputTarStream(tsstorage.NewPathFileGetter(b.ourDir), tsstorage.NewJSONUnpacker(&b.ourMeta))
			got, err := io.ReadAll(reassembled)
			reassembled.Close()
			if !tc.hostPaths && (err != nil || !bytes.Equal(got, data)) {
				t.Errorf("the layer does not reassemble to the archive (%v)", err)
			}
		})
	}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// snapshot describes every entry under root (root included): type, mode,
// owner, times, size, content, link target, device, xattrs and hard link
// groups. Times and modes are read before any content or directory is;
// times after since (not from the archive) show as "new".
func snapshot(t testing.TB, root string, since time.Time) []string {
	t.Helper()
	var out []string
	inodes := map[uint64]string{}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("%s type=%o mode=%o owner=%d:%d mtime=%s atime=%s",
			rel, st.Mode&unix.S_IFMT, st.Mode&0o7777, st.Uid, st.Gid, stamp(st.Mtim, since), stamp(st.Atim, since))
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case unix.S_IFCHR, unix.S_IFBLK:
			line += fmt.Sprintf(" dev=%d", st.Rdev)
		case unix.S_IFREG:
			files = append(files, p)
			line += fmt.Sprintf(" size=%d", st.Size)
			if first, ok := inodes[st.Ino]; ok {
				line += " link=" + first
			} else {
				inodes[st.Ino] = rel
			}
		}
		line += " xattrs=" + xattrList(p)
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(root, p)
		out = append(out, rel+" sha256="+hex.EncodeToString(sum[:8]))
	}
	return out
}

func stamp(ts unix.Timespec, since time.Time) string {
	if t := time.Unix(ts.Unix()); t.After(since) {
		return "new"
	}
	return fmt.Sprintf("%d.%09d", ts.Sec, ts.Nsec)
}

func xattrList(p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return "?" + err.(syscall.Errno).Error()
	}
	var kv []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" || name == "security.selinux" {
			continue
		}
		v := make([]byte, 4096)
		m, _ := unix.Lgetxattr(p, name, v)
		kv = append(kv, name+"="+string(v[:max(m, 0)]))
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

// TestExtractLayerCutShort cuts an archive in the middle of a file: the
// extraction fails, and the files the metadata pipe had yet to finish are
// closed all the same, and so are the directories it had open, those it
// dropped from its cache included.
func TestExtractLayerCutShort(t *testing.T) {
	for name, entries := range map[string][]tarEntry{
		"files": manyFiles(2 * maxOpenFiles), "directories": manyDirs(2 * maxCachedDirs),
	} {
		t.Run(name, func(t *testing.T) {
			data := makeTar(t, entries, nil)
			before := openFDs(t)
			_, err := extractLayer(bytes.NewReader(cutInContent(t, data)), t.TempDir(), extractOptions{ignoreChownErrors: singleUID(t)},
				tsstorage.NewJSONPacker(io.Discard))
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("extraction of a cut archive = %v, want an unexpected EOF", err)
			}
			if after := openFDs(t); after != before {
				t.Fatalf("%d descriptors open after the failed extraction, %d before", after, before)
			}
		})
	}
}

// cutInContent cuts the archive data in the content of the first file
// that ends past two thirds of it.
func cutInContent(t *testing.T, data []byte) []byte {
	t.Helper()
	r := bytes.NewReader(data)
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no file content past two thirds of the archive: %v", err)
		}
		// The reader is at the start of the content.
		if start := len(data) - r.Len(); hdr.Size > 1 && int(hdr.Size)+start > len(data)*2/3 {
			return data[:start+int(hdr.Size)/2]
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(des)
}
