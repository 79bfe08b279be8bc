package images

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

const (
	busyTag  = "docker.io/library/busybox:latest"
	busyDig  = "docker.io/library/busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	otherTag = "docker.io/library/other:1"
)

func TestImageRemoveRules(t *testing.T) {
	stopped := &container.Container{ID: strings.Repeat("c", 64)}
	running := &container.Container{ID: strings.Repeat("d", 64), State: container.State{Status: container.StatusRunning}}
	img := imagestoretest.Image(1, busyTag, busyDig)
	short := img.ID[7:19]
	chain := img.Layers[0].DiffID.String() // one layer: the chain ID is its DiffID
	tests := []struct {
		name      string
		refs      []string
		users     []*container.Container
		ref       string
		force     bool
		want      []image.DeleteResponse
		wantErr   string // exact message of a conflict
		wantGone  bool
		wantLeft  []string // refs left when the image stays
		reclaimed int64
	}{
		{
			name: "untag one of two repositories", refs: []string{busyTag, busyDig, otherTag}, ref: "other:1",
			want: []image.DeleteResponse{{Untagged: "other:1"}}, wantLeft: []string{busyTag, busyDig},
		},
		{
			name: "last tag takes its digest and the image", refs: []string{busyTag, busyDig}, ref: "busybox",
			want:     []image.DeleteResponse{{Untagged: "busybox:latest"}, {Untagged: "busybox@sha256:" + strings.Repeat("1", 64)}, {Deleted: img.ID}, {Deleted: chain}},
			wantGone: true, reclaimed: 100,
		},
		{
			name: "by ID with one repository", refs: []string{busyTag, busyDig}, ref: short,
			want:     []image.DeleteResponse{{Untagged: "busybox:latest"}, {Untagged: "busybox@sha256:" + strings.Repeat("1", 64)}, {Deleted: img.ID}, {Deleted: chain}},
			wantGone: true, reclaimed: 100,
		},
		{
			name: "a container blocks the last name", refs: []string{busyTag, busyDig}, users: []*container.Container{stopped}, ref: "busybox",
			wantErr:  `conflict: unable to remove repository reference "busybox" (must force) - container cccccccccccc is using its referenced image ` + short,
			wantLeft: []string{busyTag, busyDig},
		},
		{
			name: "forced untag keeps an image a container's rootfs uses", refs: []string{busyTag}, users: []*container.Container{stopped}, ref: "busybox", force: true,
			want: []image.DeleteResponse{{Untagged: "busybox:latest"}}, wantLeft: []string{},
		},
		{
			name: "by ID with two repositories must be forced", refs: []string{busyTag, otherTag}, ref: short,
			wantErr:  "conflict: unable to delete " + short + " (must be forced) - image is referenced in multiple repositories",
			wantLeft: []string{busyTag, otherTag},
		},
		{
			name: "by ID with two repositories, forced", refs: []string{busyTag, otherTag}, ref: img.ID, force: true,
			want:     []image.DeleteResponse{{Untagged: "busybox:latest"}, {Untagged: "other:1"}, {Deleted: img.ID}, {Deleted: chain}},
			wantGone: true, reclaimed: 100,
		},
		{
			name: "by ID with a stopped container", refs: []string{busyTag}, users: []*container.Container{stopped}, ref: short,
			wantErr:  "conflict: unable to delete " + short + " (must be forced) - image is being used by stopped container cccccccccccc",
			wantLeft: []string{busyTag},
		},
		{
			name: "a running container cannot be forced away", refs: []string{busyTag}, users: []*container.Container{running}, ref: short, force: true,
			wantErr:  "conflict: unable to delete " + short + " (cannot be forced) - image is being used by running container dddddddddddd",
			wantLeft: []string{busyTag},
		},
		{
			name: "untagged image by ID", refs: nil, ref: short,
			want: []image.DeleteResponse{{Deleted: img.ID}, {Deleted: chain}}, wantGone: true, reclaimed: 100,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			im := imagestoretest.Image(1, tc.refs...)
			store := imagestoretest.New(im)
			store.InUse[im.ID] = len(tc.users) > 0
			d := &imageDeleter{store: store, users: map[string][]*container.Container{im.ID: tc.users}}
			var recs []image.DeleteResponse
			err := d.remove(context.Background(), tc.ref, tc.force, true, &recs)
			if tc.wantErr != "" {
				if !errdefs.IsConflict(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(recs, tc.want) {
				t.Errorf("records = %+v\nwant %+v", recs, tc.want)
			}
			left, gone := store.Imgs[im.ID]
			if gone = !gone; gone != tc.wantGone {
				t.Fatalf("image gone = %v", gone)
			}
			if !gone && !slices.Equal(nonNil(left.Refs), nonNil(tc.wantLeft)) {
				t.Errorf("refs left %q, want %q", left.Refs, tc.wantLeft)
			}
			if d.reclaimed != tc.reclaimed {
				t.Errorf("reclaimed %d, want %d", d.reclaimed, tc.reclaimed)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		d := &imageDeleter{store: imagestoretest.New(), users: map[string][]*container.Container{}}
		if err := d.remove(context.Background(), "nope", false, true, new([]image.DeleteResponse)); !errdefs.IsNotFound(err) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestImagePruneRules(t *testing.T) {
	ctx := context.Background()
	dangling := imagestoretest.Image(1)
	digestOnly := imagestoretest.Image(2, busyDig)
	tagged := imagestoretest.Image(3, otherTag)
	used := imagestoretest.Image(4)
	labeled := imagestoretest.Image(5)
	labeled.Config = &dockerspec.DockerOCIImage{}
	labeled.Config.Config.Labels = map[string]string{"keep": "no"}
	all := []*imagestore.Image{dangling, digestOnly, tagged, used, labeled}
	tests := []struct {
		name    string
		filters string
		deleted []string // image IDs
	}{
		{"dangling by default", "", []string{dangling.ID, digestOnly.ID, labeled.ID}},
		{"all unused", `{"dangling":["false"]}`, []string{dangling.ID, digestOnly.ID, tagged.ID, labeled.ID}},
		{"until keeps newer images", `{"until":["1970-01-02"]}`, nil},
		{"label", `{"label":["keep=no"]}`, []string{labeled.ID}},
		{"label!", `{"label!":["keep"]}`, []string{dangling.ID, digestOnly.ID}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var copies []*imagestore.Image
			for _, img := range all {
				c := *img
				c.Refs = slices.Clone(img.Refs)
				c.Created = c.Created.AddDate(2024, 0, 0)
				copies = append(copies, &c)
			}
			store := imagestoretest.New(copies...)
			cs, err := container.NewStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.Create(ctx, &container.Container{ImageID: used.ID}); err != nil {
				t.Fatal(err)
			}
			e := New(Options{Store: store, Containers: cs})
			rep, err := e.ImagePrune(ctx, tc.filters)
			if err != nil {
				t.Fatal(err)
			}
			var deleted []string
			for _, r := range rep.ImagesDeleted {
				if slices.ContainsFunc(all, func(i *imagestore.Image) bool { return i.ID == r.Deleted }) {
					deleted = append(deleted, r.Deleted)
				}
			}
			slices.Sort(deleted)
			want := slices.Clone(tc.deleted)
			slices.Sort(want)
			if !slices.Equal(deleted, want) {
				t.Errorf("deleted %q\nwant %q", deleted, want)
			}
			if rep.SpaceReclaimed != uint64(100*len(want)) {
				t.Errorf("SpaceReclaimed = %d", rep.SpaceReclaimed)
			}
			if store.Imgs[used.ID] == nil {
				t.Error("an image a container uses was pruned")
			}
		})
	}
	e := New(Options{Store: imagestoretest.New()})
	for _, f := range []string{`{"nope":["x"]}`, `{"dangling":["maybe"]}`, `{"until":["a","b"]}`, `{"until":["yesterday"]}`, `{`} {
		if _, err := e.ImagePrune(ctx, f); !errdefs.IsInvalidArgument(err) {
			t.Errorf("prune %s = %v, want invalid argument", f, err)
		}
	}
}

func TestIsSingleReference(t *testing.T) {
	tests := []struct {
		refs []string
		want bool
	}{
		{nil, false},
		{[]string{busyTag}, true},
		{[]string{busyTag, busyDig}, true},
		{[]string{busyDig}, true},
		{[]string{busyTag, otherTag}, false},
		{[]string{"docker.io/library/busybox:1", busyTag}, false},
		{[]string{otherTag, busyDig}, false},
	}
	for _, tc := range tests {
		if got := isSingleReference(parseRefs(tc.refs)); got != tc.want {
			t.Errorf("isSingleReference(%q) = %v", tc.refs, got)
		}
	}
}

func TestChainIDs(t *testing.T) {
	a, b := digest.FromString("a"), digest.FromString("b")
	m := chainIDs([]imagestore.Layer{{ID: "1", DiffID: a, Size: 1}, {ID: "2", DiffID: b, Size: 2}})
	// Docker's layer.CreateChainID: sha256 of "<parent chain> <diff id>".
	if m["1"].chainID != a || m["2"].chainID != digest.FromString(a.String()+" "+b.String()) || m["2"].size != 2 {
		t.Errorf("chainIDs = %+v", m)
	}
}
