package images

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
)

func TestParseImageFilters(t *testing.T) {
	tests := []struct {
		raw      string
		dangling bool
		err      string
	}{
		{"", false, ""},
		{`{"dangling":{"true":true}}`, true, ""},
		{`{"dangling":["1"]}`, true, ""},
		{`{"dangling":["FALSE"]}`, false, ""},
		{`{"dangling":["true","false"]}`, false, "invalid filter 'dangling=false,true'"},
		{`{"dangling":["maybe"]}`, false, "invalid filter 'dangling=maybe'"},
		{`{"dangling":[]}`, false, "invalid filter 'dangling='"},
		{`{"colour":["red"]}`, false, "invalid filter 'colour'"},
		{`not json`, false, "invalid filter"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			f, err := container.ParseFiltersOf(tc.raw, imageListFilters)
			var dangling bool
			if err == nil {
				dangling, err = filterBool(f, "dangling", false)
			}
			if tc.err != "" {
				if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || dangling != tc.dangling {
				t.Errorf("dangling = %v, %v", dangling, err)
			}
		})
	}
}

func TestMatchingRefs(t *testing.T) {
	refs := []string{busyTag, busyDig, "127.0.0.1:5000/team/app:v1", otherTag}
	tests := []struct {
		patterns      []string
		tags, digests []string
	}{
		{nil, []string{"busybox:latest", "127.0.0.1:5000/team/app:v1", "other:1"}, []string{"busybox@sha256:" + busyDig[len(busyDig)-64:]}},
		{[]string{"busybox"}, []string{"busybox:latest"}, []string{"busybox@sha256:" + busyDig[len(busyDig)-64:]}},
		{[]string{"*:1"}, []string{"other:1"}, nil},
		{[]string{"127.0.0.1:5000/team/*"}, []string{"127.0.0.1:5000/team/app:v1"}, nil},
		{[]string{"nothing"}, nil, nil},
	}
	for _, tc := range tests {
		tags, digests, err := matchingRefs(refs, container.Filters{}.Add("reference", tc.patterns...))
		if err != nil || !slices.Equal(tags, tc.tags) || !slices.Equal(digests, tc.digests) {
			t.Errorf("reference=%q: tags %q digests %q, %v", tc.patterns, tags, digests, err)
		}
	}
	if _, _, err := matchingRefs(refs, container.Filters{}.Add("reference", "[")); !errdefs.IsInvalidArgument(err) {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestRepoTagReference(t *testing.T) {
	tests := []struct {
		repo, tag, want string
		bad             bool
	}{
		{"", "", "", false},
		{"busybox", "", "docker.io/library/busybox:latest", false},
		{"busybox", "1", "docker.io/library/busybox:1", false},
		{"127.0.0.1:5000/x", "v2", "127.0.0.1:5000/x:v2", false},
		{"UPPER", "", "", true},
		{"busybox", "bad tag", "", true},
		{"busybox@sha256:" + busyDig[len(busyDig)-64:], "", "", true},
	}
	for _, tc := range tests {
		got, err := RepoTagReference(tc.repo, tc.tag)
		if tc.bad {
			if !errdefs.IsInvalidArgument(err) {
				t.Errorf("RepoTagReference(%q, %q) = %v, %v; want invalid argument", tc.repo, tc.tag, got, err)
			}
			continue
		}
		s := ""
		if got != nil {
			s = got.String()
		}
		if err != nil || s != tc.want {
			t.Errorf("RepoTagReference(%q, %q) = %q, %v", tc.repo, tc.tag, s, err)
		}
	}
}

// FuzzImageFilters feeds the filters parameter of the image list and prune
// endpoints: any input is accepted or refused as invalid, never a panic.
func FuzzImageFilters(f *testing.F) {
	for _, s := range []string{`{"dangling":["true"]}`, `{"label":{"a=b":true}}`, `{"until":["10m"]}`, `{"reference":["x*"]}`, `[]`, `{"before":null}`} {
		f.Add(s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, raw string) {
		for _, accepted := range []map[string]bool{imageListFilters, imagePruneFilters} {
			fl, err := container.ParseFiltersOf(raw, accepted)
			if err != nil {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("error of another class: %v", err)
				}
				continue
			}
			if _, err := filterBool(fl, "dangling", true); err != nil && !errdefs.IsInvalidArgument(err) {
				t.Fatal(err)
			}
			for _, v := range sortedValues(fl, "until") {
				if _, err := container.ParseTimestamp(v, now); err != nil && !errdefs.IsInvalidArgument(err) {
					t.Fatal(err)
				}
			}
			container.PruneLabels(fl, map[string]string{"a": "b"})
			if _, _, err := matchingRefs([]string{busyTag, busyDig}, fl); err != nil && !errdefs.IsInvalidArgument(err) {
				t.Fatal(err)
			}
		}
	})
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"10m", "1700000000.123", "2024-01-02T03:04:05Z", "2024-01-02", "-1h", "1e9"} {
		f.Add(s)
	}
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, v string) {
		ts, err := container.ParseTimestamp(v, now)
		if err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		if d, derr := time.ParseDuration(v); derr == nil && !ts.Equal(now.Add(-d)) {
			t.Fatalf("%q: %v, want now-%v", v, ts, d)
		}
	})
}
