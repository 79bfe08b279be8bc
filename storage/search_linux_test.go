package storage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	mobyregistry "github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/storage/testimage"
)

func TestSplitSearchTerm(t *testing.T) {
	tests := []struct{ term, host, name string }{
		{"busybox", "docker.io", "busybox"},
		{"someone/busybox", "docker.io", "someone/busybox"},
		{"library/busybox", "docker.io", "library/busybox"},
		{"docker.io/library/busybox", "docker.io", "library/busybox"},
		{"index.docker.io/busybox", "docker.io", "busybox"},
		{"127.0.0.1:5000/busy", "127.0.0.1:5000", "busy"},
		{"localhost/a/b", "localhost", "a/b"},
		{"registry.example/x", "registry.example", "x"},
		{"", "docker.io", ""},
	}
	for _, tt := range tests {
		host, name := splitSearchTerm(tt.term)
		if host != tt.host || name != tt.name {
			t.Errorf("splitSearchTerm(%q) = %q, %q; want %q, %q", tt.term, host, name, tt.host, tt.name)
		}
	}
}

// TestSearchRegistryCatalog searches a distribution registry, which has no
// v1 search: its catalog answers, the names that contain the term, each
// with the registry's host.
func TestSearchRegistryCatalog(t *testing.T) {
	reg := newRegistry(t, "hutch", "s3cret")
	busybox, err := testimage.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"library/busybox:1", "tools/busybox-extras:1", "library/alpine:1"} {
		reg.push(t, name, busybox)
	}
	s := newStore(t, "")
	ctx := context.Background()
	good := mobyregistry.AuthConfig{Username: "hutch", Password: "s3cret", ServerAddress: reg.host}

	got, err := s.SearchRegistry(ctx, reg.host+"/busybox", 0, good)
	if err != nil {
		t.Fatal(err)
	}
	// This in-process registry lists its catalog in no set order
	// (distribution's sorts it).
	want := []string{reg.host + "/library/busybox", reg.host + "/tools/busybox-extras"}
	if names := slices.Sorted(slices.Values(searchNames(got))); !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	got, err = s.SearchRegistry(ctx, reg.host+"/busybox", 1, good)
	if err != nil || len(got) != 1 {
		t.Errorf("limit 1: %v, %v", searchNames(got), err)
	}

	for _, auth := range []mobyregistry.AuthConfig{{}, {Username: "hutch", Password: "wrong", ServerAddress: reg.host}} {
		_, err := s.SearchRegistry(ctx, reg.host+"/busybox", 0, auth)
		if !errdefs.IsUnauthorized(err) || strings.Contains(err.Error(), "wrong") {
			t.Errorf("credentials %q: %v, want unauthorized without the password", auth.Username, err)
		}
	}
	for _, tc := range []struct {
		term  string
		limit int
		msg   string
	}{
		{"http://" + reg.host + "/busybox", 0, "invalid repository name: repository name (http://" + reg.host + "/busybox) should not have a scheme"},
		{reg.host + "/busybox", 101, "limit 101 is outside the range of [1, 100]"},
		{reg.host + "/busybox", -2, "limit -2 is outside the range of [1, 100]"},
	} {
		_, err := s.SearchRegistry(ctx, tc.term, tc.limit, good)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || err.Error() != tc.msg {
			t.Errorf("SearchRegistry(%q, %d) = %v, want %q", tc.term, tc.limit, err, tc.msg)
		}
	}
}

// TestSearchRegistryV1 searches an index with Docker's v1 search endpoint:
// its results as given (the deprecated automated mark cleared), the term
// and limit passed on.
func TestSearchRegistryV1(t *testing.T) {
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/":
			w.WriteHeader(http.StatusOK)
		case "/v1/search":
			query = r.URL.RawQuery
			_ = json.NewEncoder(w).Encode(map[string]any{"results": []map[string]any{
				{"name": "library/busybox", "description": "Busybox base image.", "star_count": 3000, "is_official": true, "is_automated": true},
			}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	s := newStore(t, "")
	got, err := s.SearchRegistry(context.Background(), host+"/busybox", 7, mobyregistry.AuthConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want := []mobyregistry.SearchResult{{Name: host + "/library/busybox", Description: "Busybox base image.", StarCount: 3000, IsOfficial: true}}
	if !slices.Equal(got, want) {
		t.Errorf("results %+v, want %+v", got, want)
	}
	if query != "n=7&q=busybox" {
		t.Errorf("query %q", query)
	}
}

func searchNames(rs []mobyregistry.SearchResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}
