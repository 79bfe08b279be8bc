package storage

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"
	"go.podman.io/image/v5/docker"
)

// Search limits, as dockerd's: the default number of results and the range
// a request may ask for.
const (
	defaultSearchLimit = 25
	maxSearchLimit     = 100
)

// SearchRegistry searches a registry for repositories whose names contain
// term, as GET /images/search does for `docker search`: term's first
// component names the registry when it looks like a host (has a dot or a
// colon, or is "localhost"), else the search goes to Docker Hub.
//
// Docker asks the registry's v1 search endpoint, as this does first (what
// Docker Hub and other indexes answer, with descriptions, stars and
// official marks). A registry without one (every distribution registry,
// Debian's docker-registry included) makes dockerd fail with "unexpected
// status code 404"; this lists its v2 catalog instead, the repositories
// whose names contain the term, as podman does, each named with the
// registry's host so that `docker pull` takes the name as shown. auth is
// X-Registry-Auth's (never logged); the store's insecure registries apply.
// limit 0 is 25; others must be in [1, 100].
func (s *Store) SearchRegistry(ctx context.Context, term string, limit int, auth registry.AuthConfig) ([]registry.SearchResult, error) {
	if strings.Contains(term, "://") {
		return nil, fmt.Errorf("invalid repository name: repository name (%s) should not have a scheme%.0w", term, errdefs.ErrInvalidArgument)
	}
	if limit == 0 {
		limit = defaultSearchLimit
	}
	if limit < 1 || limit > maxSearchLimit {
		return nil, fmt.Errorf("limit %d is outside the range of [1, %d]%.0w", limit, maxSearchLimit, errdefs.ErrInvalidArgument)
	}
	host, name := splitSearchTerm(term)
	sys, err := s.systemContext(ctx, host, s.registryOptions(auth))
	if err != nil {
		return nil, err
	}
	found, err := docker.SearchRegistry(ctx, sys, host, name, limit)
	if err != nil {
		return nil, classifyRegistryAnswer(err)
	}
	out := make([]registry.SearchResult, 0, len(found))
	for _, f := range found {
		r := registry.SearchResult{
			Name:        f.Name,
			Description: f.Description,
			StarCount:   f.StarCount,
			IsOfficial:  f.IsOfficial,
			// dockerd forces the deprecated field to false: Docker Hub's
			// value is not to be trusted.
		}
		if host != "docker.io" && !strings.HasPrefix(r.Name, host+"/") {
			r.Name = host + "/" + r.Name
		}
		out = append(out, r)
	}
	return out, nil
}

// splitSearchTerm splits a search term into the registry it goes to and
// the name searched for, by dockerd's rule: the first component is a
// registry only if it has a dot or a colon or is "localhost". Docker Hub's
// index names are all "docker.io".
func splitSearchTerm(term string) (host, name string) {
	first, rest, ok := strings.Cut(term, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		return "docker.io", term
	}
	if first == "index.docker.io" {
		first = "docker.io"
	}
	return first, rest
}
