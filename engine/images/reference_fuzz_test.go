package images

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// nameStore records every name the engine hands the image store.
type nameStore struct {
	*imagestoretest.Fake
	tagged, pushed, untagged, saved []string
}

func (s *nameStore) TagImage(ctx context.Context, id, name string) error {
	s.tagged = append(s.tagged, name)
	return s.Fake.TagImage(ctx, id, name)
}

func (s *nameStore) UntagImage(ctx context.Context, id, ref string) error {
	s.untagged = append(s.untagged, ref)
	return s.Fake.UntagImage(ctx, id, ref)
}

func (s *nameStore) PushImage(_ context.Context, _, name string, _ registry.AuthConfig, _ func(jsonstream.Message)) error {
	s.pushed = append(s.pushed, name)
	return nil
}

func (s *nameStore) SaveImages(_ context.Context, images []imagestore.SaveImage, _ io.Writer) error {
	for _, img := range images {
		s.saved = append(s.saved, img.Names...)
	}
	return nil
}

// FuzzImageNames gives client-chosen names to the image verbs that parse
// them (tag, commit's and import's repo and tag, push, rmi, save): each
// refuses them as an invalid argument or a missing image, or hands the
// store fully qualified references that are safe as paths.
func FuzzImageNames(f *testing.F) {
	for _, s := range []string{
		"busybox", "busybox:latest", "busybox@sha256:" + strings.Repeat("1", 64), "other:1", "docker.io/library/busybox",
		"localhost:5000/a/b:c", "sha256", "sha256:" + strings.Repeat("a", 64), "../../etc", "/etc/passwd", "a/../b",
		"a:..", "a..b", "Busybox", "a\x00b", "", ":", "@", "a:b:c",
	} {
		f.Add(s, "", "")
		f.Add("busybox", s, "1")
		f.Add("busybox", "repo", s)
	}
	f.Fuzz(func(t *testing.T, ref, repo, tag string) {
		cs, err := container.NewStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		img := imagestoretest.Image(1, busyTag, busyDig, otherTag)
		store := &nameStore{Fake: imagestoretest.New(img)}
		e := New(Options{Store: store, Containers: cs})
		ctx := context.Background()

		named, err := RepoTagReference(repo, tag)
		switch {
		case err != nil:
			checkNameRefusal(t, "commit/import", err)
		case named == nil && repo != "":
			t.Errorf("repo %q tag %q: no reference and no error", repo, tag)
		case named != nil:
			// A repository named "sha256" passes here: the store refuses
			// it for commit and import (storage's TestImageName).
			if reference.FamiliarName(named) != "sha256" {
				checkStoredName(t, named.String(), true)
			}
			if tag != "" && named.Tag() != tag {
				t.Errorf("repo %q tag %q: tag %q", repo, tag, named.Tag())
			}
		}
		if err := e.ImageTag(ctx, img.ID, repo, tag); err != nil {
			checkNameRefusal(t, "tag", err)
		}
		if err := e.ImagePush(ctx, PushRequest{Name: repo, Tag: tag}, func(jsonstream.Message) {}); err != nil {
			checkNameRefusal(t, "push", err)
		}
		if err := e.ImageSave(ctx, []string{ref}, nil, io.Discard); err != nil {
			checkNameRefusal(t, "save", err)
		}
		// An ID prefix of an image with several repositories is a conflict.
		if _, err := e.ImageRemove(ctx, ref, RemoveRequest{}); err != nil && !errdefs.IsConflict(err) {
			checkNameRefusal(t, "rmi", err)
		}
		for _, n := range store.tagged {
			checkStoredName(t, n, true)
		}
		for _, n := range store.pushed {
			checkStoredName(t, n, true)
		}
		for _, n := range store.saved {
			checkStoredName(t, n, true)
		}
		for _, n := range store.untagged {
			checkStoredName(t, n, false)
		}
	})
}

// checkNameRefusal fails t unless err is a clear refusal of a name: an
// invalid argument or a missing image, with a message.
func checkNameRefusal(t *testing.T, op string, err error) {
	t.Helper()
	if strings.TrimSpace(err.Error()) == "" || !(errdefs.IsInvalidArgument(err) || errdefs.IsNotFound(err)) {
		t.Errorf("%s: %q (%T) is not a clear refusal", op, err, err)
	}
}

// checkStoredName fails t unless name is a fully qualified reference as
// it normalizes, with a tag (tagged) or a tag or a digest, that is a
// clean relative path without "." or ".." elements, NUL or spaces.
func checkStoredName(t *testing.T, name string, tagged bool) {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil || named.String() != name {
		t.Fatalf("the store got %q, which normalizes to %v (%v)", name, named, err)
	}
	if d := reference.Domain(named); d == "" || !strings.HasPrefix(name, d+"/") {
		t.Errorf("the store got %q, not qualified by a registry", name)
	}
	_, isTagged := named.(reference.Tagged)
	_, isDigested := named.(reference.Digested)
	if tagged && (!isTagged || isDigested) || !tagged && isTagged == isDigested {
		t.Errorf("the store got %q: tagged %v, digested %v", name, isTagged, isDigested)
	}
	if reference.FamiliarName(named) == "sha256" && tagged {
		t.Errorf("the store got %q, a name that reads as an image ID", name)
	}
	if strings.ContainsAny(name, "\x00 \t\n") || !filepath.IsLocal(name) || filepath.Clean(name) != name {
		t.Errorf("the store got %q, not a clean relative path", name)
	}
	for _, elem := range strings.Split(name, "/") {
		if strings.HasPrefix(elem, ".") {
			t.Errorf("the store got %q, with the path element %q", name, elem)
		}
	}
}
