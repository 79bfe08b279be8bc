package images

import (
	"context"
	"fmt"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine/container"
)

// searchFilters are the filter keys GET /images/search takes, as dockerd.
var searchFilters = map[string]bool{"is-automated": true, "is-official": true, "stars": true}

// SearchImages answers GET /images/search (docker search): the registry's
// repositories matching term, filtered as dockerd filters them. Filters
// are checked before the registry is asked; is-automated=true matches
// nothing without asking (the field is deprecated and always false),
// is-official keeps those whose mark is the value given, stars those with
// at least the largest count given.
func (s *Service) SearchImages(ctx context.Context, term string, limit int, filterJSON string, auth registry.AuthConfig) ([]registry.SearchResult, error) {
	f, err := container.ParseFiltersOf(filterJSON, searchFilters)
	if err != nil {
		return nil, err
	}
	automated, err := searchBool(f, "is-automated")
	if err != nil {
		return nil, err
	}
	if automated != nil && *automated {
		return []registry.SearchResult{}, nil
	}
	official, err := searchBool(f, "is-official")
	if err != nil {
		return nil, err
	}
	stars := 0
	for _, v := range f.Values("stars") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("invalid filter 'stars=%s': %w%.0w", v, err, errdefs.ErrInvalidArgument)
		}
		stars = max(stars, n)
	}
	store, err := s.imageStore()
	if err != nil {
		return nil, err
	}
	found, err := store.SearchRegistry(ctx, term, limit, auth)
	if err != nil {
		return nil, err
	}
	out := []registry.SearchResult{}
	for _, r := range found {
		if official != nil && r.IsOfficial != *official {
			continue
		}
		if r.StarCount < stars {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// searchBool is a boolean filter of a search, read as dockerd's
// GetBoolOrDefault: one value, "true"/"1" or "false"/"0", anything else
// its "invalid filter 'key=[values]'". nil when the filter is not given.
func searchBool(f container.Filters, key string) (*bool, error) {
	vs := f.Values(key)
	if len(vs) == 0 {
		return nil, nil
	}
	var b bool
	switch {
	case len(vs) > 1:
	case vs[0] == "true" || vs[0] == "1":
		b = true
		return &b, nil
	case vs[0] == "false" || vs[0] == "0":
		return &b, nil
	}
	return nil, fmt.Errorf("invalid filter '%s=%v'%.0w", key, vs, errdefs.ErrInvalidArgument)
}
