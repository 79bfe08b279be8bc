package storage

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
)

// referenceSeeds are the references the fuzz targets start from: the
// forms Docker accepts and names that try to become paths.
var referenceSeeds = []string{
	"busybox", "busybox:1.36", "busybox:", "busybox@" + testDigest, "busybox:1.36@" + testDigest,
	"docker.io/library/busybox:latest", "localhost:5000/team/app:v2", "127.0.0.1:5000/x", "[::1]:5000/x:1",
	"quay.io/org/img:tag", "scratch", "docker.io/library/scratch:1", strings.Repeat("a", 64), "sha256:" + strings.Repeat("a", 64),
	"../../etc/passwd", "/etc/passwd", "a/../b", "a/./b", "a//b", "./a", "a/..", "a/.", "..", ".", "a:..", "a:.hidden", "a:b/../c",
	"a\x00b", "a:b\x00", "a@sha256:..", "Busybox", "busy box", "a/b/c/d/e/f:" + strings.Repeat("t", 128), "a:" + strings.Repeat("t", 129),
	"a..b", "a._b", "a__b", "a---b", "a.-b", "foo.com:/x", "foo..com/x", "foo.com:99999/x", "a:1..2",
}

func TestImageName(t *testing.T) {
	tests := []struct {
		name, want string
		message    string // of a refusal
	}{
		{"busybox:1", "docker.io/library/busybox:1", ""},
		{"localhost:5000/a/b:v1..2", "localhost:5000/a/b:v1..2", ""},
		{"busybox", "", `storage: tag name "busybox" has no tag: invalid argument`},
		{"busybox@" + testDigest, "", `storage: tag name "busybox@` + testDigest + `" has no tag: invalid argument`},
		{"busybox:1@" + testDigest, "", `storage: tag name "busybox:1@` + testDigest + `" has a digest as well as a tag: invalid argument`},
		{"sha256:" + strings.Repeat("a", 64), "", "refusing to create an ambiguous tag using digest algorithm as name"},
		{"../x:1", "", "invalid reference format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := imageName("tag", tt.name)
			if tt.message != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || err.Error() != tt.message {
					t.Errorf("imageName(%q) = %v, %v; want the refusal %q", tt.name, got, err, tt.message)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Errorf("imageName(%q) = %v, %v; want %s", tt.name, got, err, tt.want)
			}
		})
	}
}

func FuzzNormalizeReference(f *testing.F) {
	for _, s := range referenceSeeds {
		f.Add(s, "")
	}
	for _, tag := range []string{"1.36", testDigest, "..", "a..b", ".hidden", "a/b", "a\x00", "sha256:..", strings.Repeat("t", 129)} {
		f.Add("busybox", tag)
	}
	f.Fuzz(func(t *testing.T, fromImage, tag string) {
		got, err := NormalizeReference(fromImage, tag)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		checkQualified(t, got)
		if again, err := NormalizeReference(got, ""); err != nil || again != got {
			t.Errorf("NormalizeReference(%q, \"\") = %q, %v: not the same reference", got, again, err)
		}
		if named, err := parsePullReference(got); err != nil || named.String() != got {
			t.Errorf("parsePullReference(%q) = %v, %v", got, named, err)
		}
	})
}

func FuzzParsePullReference(f *testing.F) {
	for _, s := range referenceSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		named, err := parsePullReference(ref)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		got := named.String()
		checkQualified(t, got)
		if again, err := parsePullReference(got); err != nil || again.String() != got {
			t.Errorf("parsePullReference(%q) = %v, %v: not the same reference", got, again, err)
		}
		if n, err := NormalizeReference(ref, ""); err != nil || n != got {
			t.Errorf("NormalizeReference(%q) = %q, %v; Pull takes it as %q", ref, n, err, got)
		}
	})
}

// checkRefusal fails t unless err refuses a reference clearly: an invalid
// argument with a message, or the reserved name "scratch".
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	switch {
	case strings.TrimSpace(err.Error()) == "":
		t.Errorf("refusal %#v has no message", err)
	case errors.Is(err, errdefs.ErrPermissionDenied) && strings.Contains(err.Error(), "scratch"):
	case !errors.Is(err, errdefs.ErrInvalidArgument):
		t.Errorf("refusal %q (%T) is not an invalid argument", err, err)
	}
}

// checkQualified fails t unless name is a fully qualified reference with
// a tag or a digest, written as it normalizes, that is safe as a relative
// path: no NUL, no control character or space, no "." or ".." element.
func checkQualified(t *testing.T, name string) {
	t.Helper()
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			t.Fatalf("%q holds the character %q", name, c)
		}
	}
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		t.Fatalf("%q does not parse again: %v", name, err)
	}
	if named.String() != name {
		t.Errorf("%q normalizes to %q", name, named.String())
	}
	domain := reference.Domain(named)
	if domain == "" || !strings.HasPrefix(name, domain+"/") {
		t.Errorf("%q is not qualified by a registry (domain %q)", name, domain)
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if tagged == digested {
		t.Errorf("%q: tagged %v, digested %v: want one of them", name, tagged, digested)
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == "" || elem == "." || elem == ".." || strings.HasPrefix(elem, ":") || strings.HasPrefix(elem, ".") {
			t.Errorf("%q has the path element %q", name, elem)
		}
	}
	if !filepath.IsLocal(name) || filepath.Clean(name) != name {
		t.Errorf("%q is not a clean relative path", name)
	}
	// A tag may hold ".." ("v1..2", as Docker's grammar allows) but is
	// never a dot name or more than one path element.
	if tg, ok := named.(reference.Tagged); ok && (strings.HasPrefix(tg.Tag(), ".") || strings.Contains(tg.Tag(), "/")) {
		t.Errorf("%q has the tag %q, which is not a plain file name", name, tg.Tag())
	}
}
