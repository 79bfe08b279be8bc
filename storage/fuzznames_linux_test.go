package storage

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	mobyregistry "github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine/imagestore"
)

// FuzzStoreNames gives one name to everything of the store that takes an
// image name or reference from a client (tag, untag, lookup, import,
// commit, push): each either refuses it clearly, or stores a fully
// qualified reference that is safe as a path and finds the image by it.
// Nothing is sent to a registry: pushes name an image the store does not
// have, which is refused before any connection.
func FuzzStoreNames(f *testing.F) {
	for _, s := range referenceSeeds {
		f.Add(s)
	}
	s := fuzzStore(f)
	ctx := context.Background()
	const baseName = "docker.io/library/base:1"
	id, err := s.ImportImage(ctx, bytes.NewReader(rootfsTar(f, false)), imagestore.ImportConfig{}, baseName)
	if err != nil {
		f.Fatal(err)
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	f.Fuzz(func(t *testing.T, name string) {
		before := imageNames(t, s, id)

		err := s.TagImage(ctx, id, name)
		added := slices.DeleteFunc(imageNames(t, s, id), func(n string) bool { return slices.Contains(before, n) })
		if err != nil {
			checkRefusal(t, err)
			if len(added) > 0 {
				t.Errorf("refused tag %q added %q", name, added)
			}
		} else {
			named, _ := reference.ParseNormalizedNamed(name)
			for _, n := range added {
				checkQualified(t, n)
				if n != named.String() {
					t.Errorf("tag %q stored %q, want %q", name, n, named)
				}
			}
			if img, err := s.LookupImage(ctx, name); err != nil || img.ID != id {
				t.Errorf("tagged %q, then LookupImage = %v, %v", name, img, err)
			}
			for _, n := range added {
				if err := s.UntagImage(ctx, id, n); err != nil {
					t.Fatal(err)
				}
			}
		}

		// Lookups find the image or say why not.
		if _, err := s.Image(name); err != nil && !errdefs.IsNotFound(err) {
			checkRefusal(t, err)
		}
		if err := s.UntagImage(ctx, id, name); err != nil && !errdefs.IsNotFound(err) {
			checkRefusal(t, err)
		}
		if !slices.Contains(imageNames(t, s, id), baseName) {
			if err := s.TagImage(ctx, id, baseName); err != nil {
				t.Fatal(err)
			}
		}

		// Names other operations take are parsed first: they are refused
		// as invalid, or the operation fails for what comes next (an
		// archive that is no tar, a missing rootfs or image).
		if _, err := s.ImportImage(ctx, strings.NewReader("no tar"), imagestore.ImportConfig{}, name); !errors.Is(err, errdefs.ErrInvalidArgument) {
			t.Errorf("import of no tar as %q: %v", name, err)
		}
		if _, err := s.CommitImage(ctx, "no-such-rootfs", imagestore.CommitImage{Name: name}); !errdefs.IsNotFound(err) {
			checkRefusal(t, err)
		}
		if err := s.PushImage(ctx, missing, name, mobyregistry.AuthConfig{}, nil); !errdefs.IsNotFound(err) {
			checkRefusal(t, err)
		}
		if after := imageNames(t, s, id); !slices.Equal(after, before) {
			t.Errorf("names %q, then %q", before, after)
		}
		if left, err := os.ReadDir(s.tmpDir); err != nil || len(left) != 0 {
			t.Errorf("temporary files left: %v, %v", left, err)
		}
	})
}

// imageNames returns the names image id has, sorted.
func imageNames(t *testing.T, s *Store, id string) []string {
	t.Helper()
	img, err := s.Image(id)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(slices.Values(img.Names))
}
