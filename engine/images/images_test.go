package images

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// listService is an image service over fake images, with a container made from
// the image used.
func listService(t *testing.T, used string, imgs ...*imagestore.Image) *Service {
	t.Helper()
	cs, err := container.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if used != "" {
		if err := cs.Create(context.Background(), &container.Container{ImageID: used}); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{Store: imagestoretest.New(imgs...), Containers: cs})
}

func TestImageList(t *testing.T) {
	day := func(n int) time.Time { return time.Date(2024, 1, n, 0, 0, 0, 0, time.UTC) }
	old := imagestoretest.Image(1, busyTag, busyDig)
	old.Created = day(1)
	mid := imagestoretest.Image(2) // dangling
	mid.Created = day(2)
	mid.Config = &dockerspec.DockerOCIImage{}
	mid.Config.Config.Labels = map[string]string{"stage": "build"}
	parent := imagestoretest.Image(3) // an untagged image a commit was made from
	parent.Created = day(3)
	child := imagestoretest.Image(4, otherTag)
	child.Created, child.Parent = day(4), parent.ID
	ids := func(all ...*imagestore.Image) []string {
		var out []string
		for _, img := range all {
			out = append(out, img.ID)
		}
		return out
	}
	tests := []struct {
		name    string
		req     ListRequest
		want    []string
		wantErr bool
	}{
		{"default hides intermediate images, newest first", ListRequest{}, ids(child, mid, old), false},
		{"all", ListRequest{All: true}, ids(child, parent, mid, old), false},
		{"dangling", ListRequest{Filters: `{"dangling":["true"]}`}, ids(mid), false},
		{"not dangling", ListRequest{Filters: `{"dangling":["false"]}`}, ids(child, old), false},
		{"reference", ListRequest{Filters: `{"reference":["busy*"]}`}, ids(old), false},
		{"reference, canonical name", ListRequest{Filters: `{"reference":["docker.io/library/busybox"]}`}, ids(old), false},
		{"reference, canonical tag glob", ListRequest{Filters: `{"reference":["docker.io/library/busybox:*"]}`}, ids(old), false},
		{"reference, canonical tag", ListRequest{Filters: `{"reference":["docker.io/library/busybox:latest"]}`}, ids(old), false},
		{"reference, other canonical name", ListRequest{Filters: `{"reference":["docker.io/library/nope"]}`}, nil, false},
		{"reference, bad pattern", ListRequest{Filters: `{"reference":["["]}`}, nil, true},
		{"label", ListRequest{Filters: `{"label":["stage=build"]}`}, ids(mid), false},
		{"before", ListRequest{Filters: `{"before":["other:1"]}`}, ids(mid, old), false},
		{"since", ListRequest{Filters: `{"since":["busybox"]}`}, ids(child, mid), false},
		{"until", ListRequest{Filters: `{"until":["2024-01-02T12:00:00Z"]}`}, ids(mid, old), false},
		{"before a missing image", ListRequest{Filters: `{"before":["nope"]}`}, nil, true},
		{"unknown filter", ListRequest{Filters: `{"size":["1"]}`}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := listService(t, old.ID, old, mid, parent, child)
			list, err := e.ImageList(context.Background(), tc.req)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, list %+v", list)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range list {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	e := listService(t, old.ID, old, mid, parent, child)
	list, err := e.ImageList(context.Background(), ListRequest{SharedSize: true})
	if err != nil {
		t.Fatal(err)
	}
	s := list[len(list)-1]
	if s.ID != old.ID || !slices.Equal(s.RepoTags, []string{"busybox:latest"}) || len(s.RepoDigests) != 1 || s.Containers != 1 ||
		s.Size != 100 || s.SharedSize != 0 || s.Created != day(1).Unix() {
		t.Errorf("summary = %+v", s)
	}
	if list[0].ParentID != parent.ID || list[1].Labels["stage"] != "build" {
		t.Errorf("list = %+v", list)
	}
}

func TestImageInspectHistoryTag(t *testing.T) {
	created := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	img := imagestoretest.Image(1, busyTag, busyDig)
	img.Comment, img.Created = "imported", created
	img.DriverData = map[string]string{"UpperDir": "/x"}
	img.Config = &dockerspec.DockerOCIImage{Image: ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: nil},
		History: []ocispec.History{
			{Created: &created, CreatedBy: "ADD rootfs"},
			{Created: &created, CreatedBy: "ENV A=1", EmptyLayer: true},
		},
	}}
	img.Config.Config.Cmd = []string{"sh"}
	e := listService(t, "", img)
	ctx := context.Background()

	resp, err := e.ImageInspect(ctx, "busybox", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != img.ID || !slices.Equal(resp.RepoTags, []string{"busybox:latest"}) || len(resp.RepoDigests) != 1 || resp.Comment != "imported" ||
		resp.Os != "linux" || resp.Config.Cmd[0] != "sh" || resp.Size != 100 || resp.GraphDriver.Name != "overlay" ||
		resp.GraphDriver.Data["UpperDir"] != "/x" || resp.Created != "2024-01-01T00:00:00Z" ||
		!slices.Equal(resp.RootFS.Layers, []string{img.Layers[0].DiffID.String()}) {
		t.Errorf("inspect = %+v", resp)
	}

	h, err := e.ImageHistory(ctx, img.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].CreatedBy != "ENV A=1" || h[0].ID != img.ID || h[0].Size != 0 || !slices.Equal(h[0].Tags, []string{"busybox:latest"}) ||
		h[1].ID != "<missing>" || h[1].Size != 100 || h[1].Created != created.Unix() {
		t.Errorf("history = %+v", h)
	}

	if err := e.ImageTag(ctx, "busybox", "mine", ""); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.store.(*imagestoretest.Fake).Imgs[img.ID].Refs, "docker.io/library/mine:latest") {
		t.Errorf("refs after tag: %q", e.store.(*imagestoretest.Fake).Imgs[img.ID].Refs)
	}
	for _, tc := range []struct{ ref, repo, tag, msg string }{
		{"busybox", "", "", "repository name (repo) is required"},
		{"busybox", "sha256", "x", "refusing to create an ambiguous tag using digest algorithm as name"},
		{"busybox", "UPPER", "", "invalid reference format"},
	} {
		if err := e.ImageTag(ctx, tc.ref, tc.repo, tc.tag); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("tag %s %s:%s = %v, want %q", tc.ref, tc.repo, tc.tag, err, tc.msg)
		}
	}
	if err := e.ImageTag(ctx, "nope", "x", ""); !errdefs.IsNotFound(err) {
		t.Errorf("tag of a missing image = %v", err)
	}
}
