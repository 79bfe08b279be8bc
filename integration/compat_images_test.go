//go:build integration

package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/moby/moby/client"
)

// Image listing and the platform parameters as Docker Engine 29 answers
// them (moby's integration/image list, inspect, pull and identity tests),
// through the Go SDK and the docker CLI.

// TestCompatImageListReference: a reference filter matches the familiar
// and the canonical forms of a name, with or without the tag, as globs.
func TestCompatImageListReference(t *testing.T) {
	d, ref := pulled(t)
	for _, n := range []string{"utest:tag1", "utest/docker:tag2", "utest:5000/docker:tag3", "busybox:latest"} {
		must(t, d, "tag", ref, n)
	}
	c := d.Client(t)
	for _, tc := range []struct {
		filter string
		tags   []string // the RepoTags of the one image listed; nil: none listed
	}{
		{"utest*/*", []string{"utest/docker:tag2", "utest:5000/docker:tag3"}},
		{"utest*", []string{"utest:tag1"}},
		{"utest", []string{"utest:tag1"}},
		{"*5000*/*", []string{"utest:5000/docker:tag3"}},
		{"docker.io/library/utest", []string{"utest:tag1"}},
		{"docker.io/library/utest:*", []string{"utest:tag1"}},
		{"docker.io/utest/docker", []string{"utest/docker:tag2"}},
		{"docker.io/library/busybox", []string{"busybox:latest"}},
		{"docker.io/library/busybox:latest", []string{"busybox:latest"}},
		{"docker.io/library/nosuch", nil},
		{"docker.io/library/busybox:1", nil},
	} {
		res, err := c.ImageList(context.Background(), client.ImageListOptions{Filters: make(client.Filters).Add("reference", tc.filter)})
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		if tc.tags == nil {
			if len(res.Items) != 0 {
				t.Errorf("%s: listed %+v", tc.filter, res.Items)
			}
			continue
		}
		if len(res.Items) != 1 {
			t.Errorf("%s: %d images, want 1", tc.filter, len(res.Items))
			continue
		}
		got := slices.Sorted(slices.Values(res.Items[0].RepoTags))
		if !slices.Equal(got, tc.tags) {
			t.Errorf("%s: RepoTags %q, want %q", tc.filter, got, tc.tags)
		}
	}
	// docker images <name> sends the name as a reference filter.
	if out := must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}", "docker.io/library/busybox"); out != "busybox:latest" {
		t.Errorf("docker images docker.io/library/busybox = %q", out)
	}
}
